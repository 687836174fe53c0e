//! A generalized release (full-domain or local recoding) published in phases, each a function
//! that hands the next what it found ([`publish_to`] runs them in order):
//!
//! 1. **count** ([`count`]): the failing classes (given, or counted), the rows they suppress
//!    against the policy's limit, and the population's counts per label;
//! 2. **rows** ([`rows`]): the recoded rows, suppressed, shuffled and labelled on their way to
//!    the writer, counted per class as they pass;
//! 3. **write** ([`PublishRequest::write`]): staged next to the output;
//! 4. **verify** ([`verify_written`]): the written rows measured against every requirement and
//!    accounted for, synthetic records added and verified again;
//! 5. **settle** ([`settle`]): the post-analytics and their thresholds, and the unpublished
//!    person column left out;
//! 6. **commit** ([`PublishRequest::commit`]).
//!
//! Nothing is visible at the output before the commit: every refusal leaves the staged files
//! to be removed.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use datafusion::arrow::datatypes::DataType;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::streaming::StreamingTable;
use datafusion::dataframe::DataFrame;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::ExecutionPlanProperties;
use datafusion::prelude::SessionContext;

use super::class_keys::KeyCounts;
use super::classes::ClassCounter;
use super::count::{
    count_classes, failing_by_size, failing_by_sql, failing_from_batches, first_i64, merge_counters,
};
use super::post_analytics::post_analytics;
use super::request::PublishRequest;
use super::shuffle::{self, RowOrder};
use super::staged::StagedOutput;
use super::synthetic::{self, SyntheticReport};
use super::verify::{self, Verification, measure_classes};
use super::{
    PersonReport, PublishProgress, PublishReport, PublishTimings, QiLevel, expand, in_order,
    population, suppress, writer_context,
};
use crate::errors::is_memory_exhausted;
use crate::local_recode::LocalRecodeFunction;
use crate::policy::{PopulationRequirement, PostAnalytics, SuppressionMode, quote_ident};
use crate::provider::{CLASS_KEY_COLUMN, Generalization, GeneralizedTable};
use crate::search::FailingClasses;
use crate::search::release::Release;

/// Publishes `release` of the policy's registered input to `request`'s output: the phases of
/// the module documentation. `failing`, when given, are the failing classes already known
/// (see [`super::publish_ordered`]); `progress` is told the rows each pass reads.
pub async fn publish_to(
    request: PublishRequest<'_>,
    release: &Release,
    failing: Option<FailingClasses>,
    order: RowOrder,
    progress: Option<Arc<PublishProgress>>,
) -> Result<PublishReport> {
    let PublishRequest { ctx, policy, .. } = request;
    #[cfg(feature = "delta")]
    if policy.synthetic().is_some() && matches!(request.output, super::Output::Delta { .. }) {
        return Err(DataFusionError::Plan(
            "[synthetic] publishes Parquet files; a Delta output is not supported with it".into(),
        ));
    }
    let started = Instant::now();
    let table = policy.generalized_table(ctx, release.clone()).await?;
    let counted = count(request, &table, release, failing, progress.as_deref()).await?;
    let classes_seconds = started.elapsed().as_secs_f64();

    let started = Instant::now();
    let rows = rows(request, &table, &counted, order, progress.as_deref()).await?;
    let generalization = table.generalization();
    let staged = request
        .write(rows.frame, |frame| {
            Arc::new(published_schema(frame, generalization))
        })
        .await?;
    crate::interrupt::hook_pause("after-write");
    let mut write_seconds = started.elapsed().as_secs_f64();

    let started = Instant::now();
    let written = merge_counters(
        &rows.written_classes,
        &rows.written_keys,
        rows.lookup.as_deref(),
        counted.width(),
    )?;
    let (staged, verified) = verify_written(request, staged, written, &counted, order).await?;
    let verify_seconds = started.elapsed().as_secs_f64();

    let started = Instant::now();
    let settled = settle(request, &table, staged, verified, &counted).await?;
    write_seconds += settled.strip_seconds;
    let post_analytics_seconds = started.elapsed().as_secs_f64() - settled.strip_seconds;

    let started = Instant::now();
    let verification = &settled.verified.verification;
    let suppressed = match policy.suppression() {
        SuppressionMode::Drop => counted.suppressed,
        SuppressionMode::Mask => verification.suppressed_rows,
    };
    let (output, delta_version) = request
        .commit(settled.staged, || {
            serde_json::json!({
                "rows": verification.rows,
                "classes": verification.classes,
                "k": verification.k,
                "suppressed": suppressed,
                "sensitive": verification.sensitive,
            })
        })
        .await?;
    let commit_seconds = started.elapsed().as_secs_f64();
    let Verified {
        verification,
        synthetic,
        ..
    } = settled.verified;
    Ok(PublishReport {
        output,
        delta_version,
        input_rows: counted.input_rows,
        recoding: release.kind(),
        levels: policy
            .quasi_identifiers()
            .into_iter()
            .zip(release.levels().unwrap_or_default().iter().copied())
            .map(|((quasi_identifier, hierarchy), level)| QiLevel {
                quasi_identifier,
                level,
                meaning: hierarchy.level_meaning(level),
            })
            .collect(),
        suppressed_rows: counted.suppressed,
        row_order: order.name(),
        seed: order.seed(),
        post_analytics: settled.post_analytics,
        class_sizes: settled.class_sizes,
        warnings: settled.warnings,
        seconds: PublishTimings {
            classes: classes_seconds,
            write: write_seconds,
            verify: verify_seconds,
            post_analytics: post_analytics_seconds,
            commit: commit_seconds,
        },
        failing_classes: (!counted.failing_batches.is_empty()).then_some(counted.failing_batches),
        person: policy.person().map(|p| PersonReport::of(p, &verification)),
        synthetic,
        verification,
    })
}

/// What the count phase found.
struct Counted {
    quasi_identifiers: Vec<String>,
    /// The classes that fail the requirements, by label tuple (shared with the suppression).
    failing: Arc<ClassCounter>,
    /// Their rows, and the rows a local release suppressed itself when dropped.
    suppressed: u64,
    /// The input's rows (those a drop release left out included).
    input_rows: u64,
    /// Rows a local release suppressed itself (left out of, or masked in, the recoded rows).
    locally_suppressed: u64,
    /// The failing classes as counted or given, for the report.
    failing_batches: Vec<RecordBatch>,
    /// With k alone, the written classes measure the release; else the files are read back.
    k_only: bool,
    /// The population's rows per label tuple of the release, for k-map and δ-presence.
    population: Option<(Option<PopulationRequirement>, ClassCounter, u64)>,
}

impl Counted {
    fn width(&self) -> usize {
        self.quasi_identifiers.len()
    }
}

/// The count phase: the failing classes (given, or counted here), settled against the
/// requirements that depend on the whole table, refused above the policy's suppression limit
/// or when every row would be suppressed; and the population's counts.
async fn count(
    request: PublishRequest<'_>,
    table: &GeneralizedTable,
    release: &Release,
    given: Option<FailingClasses>,
    progress: Option<&PublishProgress>,
) -> Result<Counted> {
    let PublishRequest { ctx, policy, .. } = request;
    let classes_progress = progress.map(|p| Arc::clone(&p.classes));
    let generalization = table.generalization();
    let requirements = policy.requirements();
    let quasi_identifiers: Vec<String> = generalization
        .quasi_identifiers()
        .into_iter()
        .map(String::from)
        .collect();
    let width = quasi_identifiers.len();
    let recoded = table.recoded_plan();
    let k_only = !requirements.sensitive.iter().any(|s| s.is_constrained());
    // rows a local release suppressed itself: left out of (drop) or masked in (mask) the
    // recoded rows already, so they never reach the class counts
    let locally_suppressed = match release {
        Release::Local(local) => local.suppressed_rows(),
        Release::FullDomain(_) => 0,
    };
    let counted_here = given.is_none();
    let (mut failing, mut suppressed, mut input_rows, mut failing_batches) = match given {
        Some(known) => {
            if known.quasi_identifiers != quasi_identifiers
                || known.levels.as_deref() != release.levels()
            {
                return Err(DataFusionError::Plan(
                    "the failing classes given are not those of this policy's \
                     quasi-identifiers under this release"
                        .to_string(),
                ));
            }
            let failing = failing_from_batches(&known.batches, width)?;
            (
                failing,
                known.suppressed_rows,
                known.input_rows,
                known.batches,
            )
        }
        None if !generalization.suppresses() => {
            let count_sql = format!("SELECT count(*) FROM {}", quote_ident(policy.table_name()));
            let input_rows = first_i64(&ctx.sql(&count_sql).await?.collect().await?) as u64;
            (ClassCounter::new(width), 0, input_rows, Vec::new())
        }
        None => {
            // k alone: counted exactly in memory; with l or t, or when the counts do not fit
            // the memory pool, by the aggregate functions (which spill)
            let counted = if k_only {
                match count_classes(ctx, recoded, &quasi_identifiers, classes_progress.clone())
                    .await
                {
                    Ok(classes) => Some(classes),
                    Err(e) if is_memory_exhausted(&e) => None,
                    Err(e) => return Err(e),
                }
            } else {
                None
            };
            match counted {
                Some(classes) => {
                    let (failing, suppressed, input_rows) =
                        failing_by_size(&classes, requirements.k);
                    (failing, suppressed, input_rows, Vec::new())
                }
                None => failing_by_sql(ctx, policy, table, width, classes_progress).await?,
            }
        }
    };
    let dropped_any = suppressed > 0 || locally_suppressed > 0;
    if policy.suppression() == SuppressionMode::Drop
        && requirements.depends_on_table()
        && dropped_any
    {
        let added = table.settle_failing(ctx, &mut failing_batches).await?;
        failing.merge(&failing_from_batches(&added, width)?);
        suppressed += crate::search::failing::failing_rows(&added);
    }
    if counted_here && policy.suppression() == SuppressionMode::Drop {
        // the rows a drop release left out were not there to be counted
        suppressed += locally_suppressed;
        input_rows += locally_suppressed;
    }
    requirements.check_suppression(suppressed, input_rows, "nothing written")?;
    let population = match (&requirements.population, policy.population_table()) {
        (requirement, Some(population_table)) => {
            let (by_label, rows) =
                population::population_by_label(ctx, policy, population_table, release, width)
                    .await?;
            Some((*requirement, by_label, rows))
        }
        (Some(requirement), None) => {
            return Err(DataFusionError::Plan(format!(
                "{} need a population table ([population] path in the policy)",
                requirement.policy_keys().join(" and ")
            )));
        }
        (None, None) => None,
    };
    Ok(Counted {
        quasi_identifiers,
        failing: Arc::new(failing),
        suppressed,
        input_rows,
        locally_suppressed,
        failing_batches,
        k_only,
        population,
    })
}

/// The rows phase's stream to the writer, and the counts its rows leave as they pass.
struct Rows {
    frame: DataFrame,
    /// Each partition's written classes, by label tuple.
    written_classes: Arc<Mutex<Vec<(usize, ClassCounter)>>>,
    /// Each partition's written classes, by class key (a local release with no failing class).
    written_keys: Arc<Mutex<Vec<KeyCounts>>>,
    /// The local recoding whose keys label the rows, when they travel by key.
    lookup: Option<Arc<LocalRecodeFunction>>,
}

/// The rows phase: the recoded rows, the failing classes' rows dropped or masked, shuffled
/// when asked, labelled from their class key where they travelled by it, counted per class
/// as they pass (see [`super::publish_ordered`] for the passes).
async fn rows(
    request: PublishRequest<'_>,
    table: &GeneralizedTable,
    counted: &Counted,
    order: RowOrder,
    progress: Option<&PublishProgress>,
) -> Result<Rows> {
    let PublishRequest { ctx, policy, .. } = request;
    let quasi_identifiers = &counted.quasi_identifiers;
    let recoded = table.recoded_plan();
    let recoded_schema = recoded.schema();
    let positions = quasi_identifiers
        .iter()
        .map(|q| {
            recoded_schema
                .index_of_column_by_name(None, q)
                .ok_or_else(|| {
                    DataFusionError::Internal(format!(
                        "quasi-identifier '{q}' is not a column of the recoded table"
                    ))
                })
        })
        .collect::<Result<Vec<_>>>()?;
    let written_classes = Arc::new(Mutex::new(Vec::new()));
    let written_keys = Arc::new(Mutex::new(Vec::new()));
    // a local release's rows carry their class key in place of their labels while no class
    // fails (nothing to look up by label): counted and shuffled by it, labelled when written
    let (rows_source, lookup): (LogicalPlan, _) = match table.keyed_recoded_plan() {
        Some((plan, lookup)) if counted.failing.classes() == 0 => {
            (plan.clone(), Some(Arc::clone(lookup)))
        }
        _ => (recoded.clone(), None),
    };
    // no round-robin repartition (DataFusion adds one ahead of a filter, such as a local
    // release's drop of suppressed rows): each input partition's rows reach the writer in
    // their input order, so the same input and release write the same bytes
    let mut rows_state = in_order(ctx);
    if lookup.is_some() {
        // rows counted by class key merge cheaply: many partitions keep both threads busy
        // to the end (a partition is whole row groups, ~0.3 s each at 10M rows)
        crate::session::partitions_per_thread(&mut rows_state, 8);
    }
    let rows_plan = rows_state.create_physical_plan(&rows_source).await?;
    let schema = rows_plan.schema();
    let written_schema = Arc::new(recoded_schema.as_arrow().clone());
    let local_expansion = match &lookup {
        Some(lookup) => Some(Arc::new(expand::LabelExpansion::new(
            &schema,
            schema.index_of(CLASS_KEY_COLUMN)?,
            Arc::clone(&written_schema),
            quasi_identifiers,
            expand::KeyLabels::Lookup(Arc::clone(lookup)),
        )?)),
        None => None,
    };
    // shuffled rows counted by label travel by their written class's key, one integer in
    // place of the label columns the shuffle would otherwise code again
    let keyed_output = matches!(order, RowOrder::Shuffled(_))
        && lookup.is_none()
        && positions
            .iter()
            .all(|&i| schema.field(i).data_type() == &DataType::Utf8View);
    let rows_partitions = rows_plan.output_partitioning().partition_count();
    // the shuffle counts the rows it reads, for a progress report
    let read = match (order, progress) {
        (RowOrder::Shuffled(_), Some(p)) => {
            // the rows a drop release left out never reach the suppression
            let dropped = match policy.suppression() {
                SuppressionMode::Drop => counted.locally_suppressed,
                SuppressionMode::Mask => 0,
            };
            p.shuffled
                .set_total(counted.input_rows.saturating_sub(dropped));
            Some(Arc::clone(&p.shuffled))
        }
        _ => None,
    };
    let (schema, partitions) = suppress::suppressed_partitions(
        rows_plan,
        suppress::Suppression {
            quasi_identifiers: positions,
            failing: Arc::clone(&counted.failing),
            mode: policy.suppression(),
            written: Arc::clone(&written_classes),
            keyed_output,
            class_key: local_expansion.as_ref().map(|e| e.key()),
            written_keys: Arc::clone(&written_keys),
            read,
        },
    );
    let partitions = match order {
        RowOrder::Shuffled(seed) => vec![shuffle::shuffled(
            Arc::clone(&schema),
            partitions,
            seed,
            counted.input_rows,
        )],
        RowOrder::Input => partitions,
    };
    let expansion = match local_expansion {
        Some(expansion) => Some(expansion),
        None if keyed_output => Some(Arc::new(expand::LabelExpansion::new(
            &schema,
            schema.index_of(CLASS_KEY_COLUMN)?,
            written_schema,
            quasi_identifiers,
            expand::KeyLabels::Written(expand::WrittenClassLabels::new(
                Arc::clone(&written_classes),
                rows_partitions,
                &ctx.runtime_env().memory_pool,
            )),
        )?)),
        None => None,
    };
    let (schema, partitions) = match &expansion {
        Some(expansion) => (
            Arc::clone(expansion.schema()),
            partitions
                .into_iter()
                .map(|p| expand::expanded(p, Arc::clone(expansion)))
                .collect(),
        ),
        None => (schema, partitions),
    };
    let partitions = match progress {
        Some(progress) => {
            progress.written.set_total(match policy.suppression() {
                SuppressionMode::Drop => counted.input_rows.saturating_sub(counted.suppressed),
                SuppressionMode::Mask => counted.input_rows,
            });
            partitions
                .into_iter()
                .map(|p| suppress::counted(p, Arc::clone(&progress.written)))
                .collect()
        }
        None => partitions,
    };
    let rows = StreamingTable::try_new(schema, partitions)?;
    // one partition, written in the order it comes: no repartitioning on the way; written
    // here even when the rows come from a cluster
    let frame = SessionContext::new_with_state(in_order(&writer_context(ctx)))
        .read_table(Arc::new(rows))?;
    Ok(Rows {
        frame,
        written_classes,
        written_keys,
        lookup,
    })
}

/// What the verify phase established of the staged release.
struct Verified {
    /// The written classes (synthetic records included), by label tuple.
    written: ClassCounter,
    verification: Verification,
    synthetic: Option<SyntheticReport>,
}

/// The verify phase: the rows the writer reports equal those passed on; the written rows meet
/// every requirement (measured on the written classes with k alone, else read back) and the
/// population's; every input row is accounted for. With `[synthetic]`, the records are added
/// and the output verified again as published.
async fn verify_written(
    request: PublishRequest<'_>,
    staged: StagedOutput,
    written: ClassCounter,
    counted: &Counted,
    order: RowOrder,
) -> Result<(StagedOutput, Verified)> {
    let PublishRequest { ctx, policy, .. } = request;
    let requirements = policy.requirements();
    let quasi_identifiers = &counted.quasi_identifiers;
    let (input_rows, suppressed) = (counted.input_rows, counted.suppressed);
    let passed_on: u64 = (0..written.classes() as u32).map(|c| written.size(c)).sum();
    if passed_on != staged.rows_written {
        return Err(DataFusionError::Execution(format!(
            "the Parquet writer reports {} rows where {passed_on} were passed on to it, so the \
             output was not published",
            staged.rows_written
        )));
    }
    let mut verification = if counted.k_only {
        measure_classes(&written, requirements, policy.suppression(), input_rows)
    } else {
        verify::verify(
            ctx,
            staged.staging(),
            quasi_identifiers,
            requirements,
            policy.suppression(),
            input_rows,
        )
        .await?
    };
    if let Some((requirement, by_label, rows)) = &counted.population {
        let (achieved, failures) = population::verify_population(
            &written,
            by_label,
            *rows,
            requirement.as_ref(),
            policy.suppression(),
        );
        verification.population = Some(achieved);
        verification.failures.extend(failures);
    }
    if !verification.passes() {
        return Err(DataFusionError::Execution(format!(
            "the written output fails the policy, so it was not published: {}",
            verification.failures.join("; ")
        )));
    }
    // every input row must be accounted for: a wrongly suppressed class that passes would
    // otherwise go unnoticed (its rows are simply missing)
    let written_as_expected = match policy.suppression() {
        SuppressionMode::Drop => verification.rows + suppressed == input_rows,
        SuppressionMode::Mask => verification.rows + verification.suppressed_rows == input_rows,
    };
    if !written_as_expected {
        return Err(DataFusionError::Execution(format!(
            "the written output has {} rows where {input_rows} input rows minus {suppressed} \
             suppressed were expected, so it was not published",
            verification.rows
        )));
    }
    let Some(settings) = policy.synthetic() else {
        return Ok((
            staged,
            Verified {
                written,
                verification,
                synthetic: None,
            },
        ));
    };
    let (staged, report) = synthetic::add_synthetic(
        ctx,
        staged,
        quasi_identifiers,
        &policy.sensitive_attributes(),
        settings,
        order.seed().unwrap_or(0),
    )
    .await?;
    if report.rows == 0 {
        return Ok((
            staged,
            Verified {
                written,
                verification,
                synthetic: Some(report),
            },
        ));
    }
    // the output as published, synthetic rows included, verified again
    let verification = verify::verify(
        ctx,
        staged.staging(),
        quasi_identifiers,
        requirements,
        policy.suppression(),
        input_rows + report.rows,
    )
    .await?;
    if !verification.passes() {
        return Err(DataFusionError::Execution(format!(
            "the written output with synthetic records fails the policy, so it was not \
             published: {}",
            verification.failures.join("; ")
        )));
    }
    if verification.rows + suppressed != input_rows + report.rows {
        return Err(DataFusionError::Execution(format!(
            "the written output has {} rows where {input_rows} input rows minus {suppressed} \
             suppressed plus {} synthetic were expected, so it was not published",
            verification.rows, report.rows
        )));
    }
    let counted_table = verify::register_written(ctx, staged.staging(), "recount").await?;
    let plan = ctx
        .table(counted_table.as_str())
        .await
        .map(|f| f.into_unoptimized_plan());
    let recounted = match plan {
        Ok(plan) => count_classes(ctx, &plan, quasi_identifiers, None).await,
        Err(e) => Err(e),
    };
    ctx.deregister_table(counted_table.as_str())?;
    Ok((
        staged,
        Verified {
            written: recounted?,
            verification,
            synthetic: Some(report),
        },
    ))
}

/// The release ready to commit.
struct Settled {
    staged: StagedOutput,
    verified: Verified,
    post_analytics: PostAnalytics,
    class_sizes: Vec<crate::profile::SizeBucket>,
    warnings: Vec<String>,
    /// Seconds spent leaving the unpublished person column out (a rewrite of the files).
    strip_seconds: f64,
}

/// The settle phase: the post-analytics of the verified files (uniqueness of the published
/// columns, leakage, persons), refused when one breaks the policy's thresholds; the class
/// sizes; and a person column that is not published left out of the files, now that persons
/// were counted on it.
async fn settle(
    request: PublishRequest<'_>,
    table: &GeneralizedTable,
    staged: StagedOutput,
    verified: Verified,
    counted: &Counted,
) -> Result<Settled> {
    let PublishRequest { ctx, policy, .. } = request;
    let Verified {
        written,
        verification,
        ..
    } = &verified;
    let post_analytics = post_analytics(
        ctx,
        staged.staging(),
        &policy.sensitive_attributes(),
        policy.person_id(),
        verification,
        (written, &counted.quasi_identifiers),
    )
    .await?;
    let broken = policy.thresholds().broken_by(&post_analytics);
    if !broken.is_empty() {
        return Err(crate::policy::thresholds_broken(&broken));
    }
    let warnings = policy.thresholds().warnings(&post_analytics);
    let class_sizes = crate::profile::size_buckets(&verify::class_sizes(
        written,
        policy.suppression() == SuppressionMode::Mask && verification.suppressed_rows > 0,
    ));
    let started = Instant::now();
    let staged = match table.generalization().unpublished_person() {
        Some(person) => staged.without_column(ctx, person).await?,
        None => staged,
    };
    let strip_seconds = started.elapsed().as_secs_f64();
    Ok(Settled {
        staged,
        verified,
        post_analytics,
        class_sizes,
        warnings,
        strip_seconds,
    })
}

/// The columns `frame` writes once the unpublished person column (if any) is left out: the
/// columns a Delta table of the release holds.
fn published_schema(
    frame: &DataFrame,
    generalization: &Generalization,
) -> datafusion::arrow::datatypes::Schema {
    let schema = frame.schema().as_arrow();
    match generalization.unpublished_person() {
        Some(person) => datafusion::arrow::datatypes::Schema::new(
            schema
                .fields()
                .iter()
                .filter(|f| f.name() != person)
                .cloned()
                .collect::<Vec<_>>(),
        ),
        None => schema.clone(),
    }
}
