//! [`GeneralizedTable`]: any table, served generalized and suppressed.
//!
//! The table wraps another [`TableProvider`] (a Parquet listing table, CSV, a `MemTable`, a
//! user's own) with a [`Generalization`]: identifiers are dropped, each quasi-identifier is
//! recoded with its hierarchy at its level (always as Utf8View, so a level-0 column and a
//! `*` have the same type), sensitive and insensitive columns are kept, and the rows of every
//! class that fails the privacy requirements (fewer than k rows; l or t not met) are
//! suppressed: left out, or kept with every quasi-identifier replaced by `*`.
//!
//! It is a view: its rows are defined by a logical plan over the inner table, which
//! DataFusion inlines into the query and optimizes as a whole. So projections reach the inner
//! scan, filters on kept columns are pushed to the inner provider, and a filter on a recoded
//! column is evaluated on the recoded values — never pushed below the recoding in a way that
//! would change its meaning, and never before the class sizes are counted (suppression is
//! decided on the whole table, then the query filters).
//!
//! The class sizes come from an aggregate over the recoded quasi-identifiers; the rows of
//! failing classes are found by a hash join against that (small) list of classes. When the
//! failing classes are already known (e.g. `anon apply` counted them to check the suppression
//! limit), [`GeneralizedTable::with_failing_classes`] joins against that list instead of
//! aggregating again. l and t are measured with this crate's functions, so a session
//! querying a table with l or t requirements needs [`crate::register`].

use std::borrow::Cow;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::AsArray;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::Int64Type;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{Column, NullEquality, ScalarValue};
use datafusion::datasource::{MemTable, ViewTable, provider_as_source};
use datafusion::error::{DataFusionError, Result};
use datafusion::functions_aggregate::expr_fn::count;
use datafusion::logical_expr::{
    Expr, JoinType, LogicalPlan, LogicalPlanBuilder, ScalarUDF, TableProviderFilterPushDown,
    TableType, when,
};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{SessionContext, coalesce, lit, not};

use crate::generalize::udf::LABEL_TYPE;
use crate::generalize::udf::generalize::GeneralizeFunction;
use crate::generalize::{Hierarchy, HierarchyRegistry, TOP_LABEL};
use crate::local_recode::{
    CLASS_KEY_FIELD, LocalRecodeFunction, SUPPRESSED_FIELD, label_field_name,
};
use crate::policy::{PrivacyRequirements, SuppressionMode};
use crate::search::failing::{ROWS, key_name};
use crate::search::release::Release;
use datafusion::functions::core::expr_fn::get_field;

/// What happens to one column.
#[derive(Debug, Clone)]
pub enum ColumnTreatment {
    /// Left out (direct identifiers).
    Drop,
    /// Recoded as the release says (quasi-identifiers), as Utf8View; the hierarchy is the
    /// one a full-domain release's levels refer to.
    QuasiIdentifier(Arc<Hierarchy>),
    /// Kept as it is (sensitive and insensitive attributes).
    Keep,
    /// The person column, replaced by its pseudonyms under `key` ([`crate::pseudonym`]), by
    /// which persons are counted; `published` says whether a reader of the table sees them
    /// (`false`: the table's rows leave the column out, and publishing strips it from the
    /// written files once they are verified).
    Pseudonym {
        /// This table's key.
        key: crate::pseudonym::PseudonymKey,
        /// Whether the pseudonyms are part of what is published.
        published: bool,
    },
}

/// A transformation of a table: a treatment per column (columns not listed are dropped), the
/// release recoding the quasi-identifiers, the requirements deciding which classes are
/// suppressed, and how.
#[derive(Debug, Clone)]
pub struct Generalization {
    /// Column name and treatment, in output order.
    pub columns: Vec<(String, ColumnTreatment)>,
    /// How the quasi-identifiers are recoded: a level each, or a label tuple per raw
    /// combination ([`Release`]), in [`Generalization::quasi_identifiers`] order.
    pub release: Release,
    /// k and the l/t requirements of each sensitive attribute; the suppression limit is not
    /// enforced here (the table serves whatever the requirements imply; `anon apply` refuses
    /// to publish beyond the limit).
    pub requirements: PrivacyRequirements,
    /// Drop or mask the rows of failing classes.
    pub suppression: SuppressionMode,
    /// For k-map and δ-presence of a full-domain release: the population's rows per label
    /// tuple at the release's levels ([`population_key`]`(i)`, [`POPULATION_ROWS`]); see
    /// [`crate::policy::Policy::generalized_table`]. `None` for a local release, whose
    /// classes were judged against the population when it was built.
    pub population: Option<LogicalPlan>,
}

impl Generalization {
    /// The recoded columns' names, in output order.
    pub fn quasi_identifiers(&self) -> Vec<&str> {
        self.columns
            .iter()
            .filter(|(_, t)| matches!(t, ColumnTreatment::QuasiIdentifier(_)))
            .map(|(name, _)| name.as_str())
            .collect()
    }

    /// Whether any class can fail: k > 1 or a requirement on a sensitive attribute.
    pub fn suppresses(&self) -> bool {
        self.requirements.can_fail()
    }

    /// The column that carries person pseudonyms to count persons by but is not published,
    /// if any: the recoded rows have it, the table's rows and a published output do not.
    pub fn unpublished_person(&self) -> Option<&str> {
        self.columns.iter().find_map(|(name, t)| match t {
            ColumnTreatment::Pseudonym {
                published: false, ..
            } => Some(name.as_str()),
            _ => None,
        })
    }
}

/// Names of the helper columns of the plans; chosen not to collide with user columns (the
/// failing classes' ones are defined with their format, [`crate::search::failing`]).
/// The population's rows of a label tuple in [`Generalization::population`].
pub const POPULATION_ROWS: &str = "__anon_population_rows";

/// The name of the label of quasi-identifier `i` in [`Generalization::population`].
pub fn population_key(i: usize) -> String {
    format!("__anon_population_key_{i}")
}
const PASSES: &str = "__anon_class_passes";
const SUPPRESSED: &str = "__anon_suppressed";
const CLASSES_ALIAS: &str = "__anon_failing_classes";
const LOCAL_LABELS: &str = "__anon_local_labels";

/// A table served generalized and suppressed; see the module documentation.
#[derive(Debug)]
pub struct GeneralizedTable {
    view: ViewTable,
    generalization: Generalization,
    recoded: LogicalPlan,
    /// a local release's keyed plan
    keyed: Option<KeyedPlan>,
}

/// The name of the class key column of [`GeneralizedTable::keyed_recoded_plan`].
pub(crate) const CLASS_KEY_COLUMN: &str = "__anon_class_key";

/// A plan of rows with class keys, and the lookup that gives their labels.
pub(crate) type KeyedPlan = (LogicalPlan, Arc<LocalRecodeFunction>);

impl GeneralizedTable {
    /// `inner` (registered or referred to as `table_name` in plans and `EXPLAIN`) generalized
    /// by `generalization`; failing classes are found when the table is queried.
    pub fn try_new(
        table_name: &str,
        inner: Arc<dyn TableProvider>,
        generalization: Generalization,
    ) -> Result<Self> {
        let (recoded, keyed) = recoded_plan(table_name, inner, &generalization, false)?;
        let plan = if generalization.suppresses() {
            let failing = failing_classes_plan(&recoded, &generalization)?;
            suppress(&recoded, failing, &generalization)?
        } else {
            recoded.clone()
        };
        Ok(Self {
            view: ViewTable::new(without_unpublished(plan, &generalization)?, None),
            generalization,
            recoded,
            keyed,
        })
    }

    /// The same table with the failing classes given (as computed by
    /// [`GeneralizedTable::failing_classes_plan`] or [`crate::search::failing_classes`], i.e.
    /// batches of the recoded quasi-identifiers of each failing class as `__anon_key_<i>`, in
    /// [`Generalization::quasi_identifiers`] order): the rows are joined against them instead
    /// of aggregating again.
    pub fn with_failing_classes(&self, failing: Vec<RecordBatch>) -> Result<Self> {
        let plan = self.kept_rows(failing)?;
        Ok(Self {
            view: ViewTable::new(without_unpublished(plan, &self.generalization)?, None),
            generalization: self.generalization.clone(),
            recoded: self.recoded.clone(),
            keyed: self.keyed.clone(),
        })
    }

    /// The recoded rows with the `failing` classes suppressed, every column kept: the person
    /// column too, which the requirements count persons of even when it is not published.
    fn kept_rows(&self, failing: Vec<RecordBatch>) -> Result<LogicalPlan> {
        if failing.iter().all(|b| b.num_rows() == 0) {
            Ok(self.recoded.clone())
        } else {
            // the keys as the recoded columns' type, so the join compares like with like and
            // casts nothing on the (large) side of the rows
            let failing = failing
                .iter()
                .map(|batch| as_label_keys(batch, self.generalization.quasi_identifiers().len()))
                .collect::<Result<Vec<_>>>()?;
            let schema = failing[0].schema();
            let table = MemTable::try_new(schema, vec![failing])?;
            let scan =
                LogicalPlanBuilder::scan(CLASSES_ALIAS, provider_as_source(Arc::new(table)), None)?
                    .project(
                        (0..self.generalization.quasi_identifiers().len())
                            .map(|i| Expr::Column(Column::from_name(key_name(i))))
                            .chain(std::iter::once(lit(true).alias(SUPPRESSED))),
                    )?
                    .build()?;
            suppress(&self.recoded, scan, &self.generalization)
        }
    }

    /// The transformation served.
    pub fn generalization(&self) -> &Generalization {
        &self.generalization
    }

    /// The plan serving the table's rows (what `SELECT *` runs).
    pub fn plan(&self) -> &LogicalPlan {
        self.view.logical_plan()
    }

    /// The recoded rows before suppression.
    pub fn recoded_plan(&self) -> &LogicalPlan {
        &self.recoded
    }

    /// For a local release: the rows before suppression as [`Self::recoded_plan`] gives them,
    /// but with each row's class key (see [`CLASS_KEY_FIELD`]), [`CLASS_KEY_COLUMN`], as the
    /// last column in place of the label columns, and the lookup whose
    /// [`LocalRecodeFunction::labels_of_keys`] makes the labels from the keys. The other
    /// columns keep their order. `None` for a full-domain release.
    pub(crate) fn keyed_recoded_plan(&self) -> Option<&KeyedPlan> {
        self.keyed.as_ref()
    }

    /// The classes that fail the requirements: their recoded quasi-identifiers as
    /// `__anon_key_<i>`, their size as `__anon_class_rows`. One scan of the inner table's
    /// quasi-identifiers (and sensitive attributes with l/t requirements).
    pub fn failing_classes_plan(&self) -> Result<LogicalPlan> {
        failing_classes_with_rows(&self.recoded, &self.generalization)
    }

    /// The classes that fail the requirements once the `failing` classes are suppressed: the
    /// kept rows judged again, their whole-table statistics (t, β, δ against the table's
    /// distribution) taken from the kept rows alone, as a reader of a release whose failing
    /// rows are dropped sees them. Same columns as [`Self::failing_classes_plan`].
    pub fn failing_classes_among_kept(&self, failing: Vec<RecordBatch>) -> Result<LogicalPlan> {
        // judged on every column: the persons are counted on the person column, which the
        // served view leaves out when it is not published
        failing_classes_with_rows(&self.kept_rows(failing)?, &self.generalization)
    }

    /// Dropping failing classes changes the distribution the kept classes are compared with
    /// (t, β, δ measure against the whole table): judges the kept classes again against the
    /// kept rows, adds the classes that now fail to `failing` (as
    /// [`Self::failing_classes_plan`] gives them), and repeats until none does. Suppression
    /// only grows, so this ends; every kept class then meets the requirements against the
    /// served table's own distribution. Returns the batches added.
    pub async fn settle_failing(
        &self,
        ctx: &SessionContext,
        failing: &mut Vec<RecordBatch>,
    ) -> Result<Vec<RecordBatch>> {
        let mut added = Vec::new();
        loop {
            let plan = self.failing_classes_among_kept(failing.clone())?;
            let more = ctx.execute_logical_plan(plan).await?.collect().await?;
            if more.iter().all(|b| b.num_rows() == 0) {
                return Ok(added);
            }
            failing.extend(more.iter().cloned());
            added.extend(more);
        }
    }

    /// This table with its failing classes computed now and settled
    /// ([`Self::settle_failing`]) when dropping them changes what the kept classes are
    /// measured against (drop mode with t, β or δ); otherwise as it is (lazy).
    pub async fn settled(self, ctx: &SessionContext) -> Result<Self> {
        if !self.drops_change_the_table() {
            return Ok(self);
        }
        let failing = self.failing_now(ctx).await?;
        self.with_failing_classes(failing)
    }

    /// Whether dropping failing classes changes what the kept classes are measured against
    /// (drop mode with t, β or δ), so that the failing classes must be settled.
    fn drops_change_the_table(&self) -> bool {
        self.generalization.suppression == SuppressionMode::Drop
            && self.generalization.requirements.depends_on_table()
    }

    /// The failing classes computed now, settled ([`Self::settle_failing`]) when
    /// [`Self::drops_change_the_table`].
    async fn failing_now(&self, ctx: &SessionContext) -> Result<Vec<RecordBatch>> {
        let mut failing = ctx
            .execute_logical_plan(self.failing_classes_plan()?)
            .await?
            .collect()
            .await?;
        if self.drops_change_the_table() {
            self.settle_failing(ctx, &mut failing).await?;
        }
        Ok(failing)
    }

    /// This table with its failing classes computed now (and settled, as [`Self::settled`]
    /// settles them), refused when they suppress more rows than the requirements'
    /// `max_suppression` allows of the inner table's rows, or every row, as publishing refuses
    /// them: a reader is served what `apply` would publish, or nothing.
    pub async fn within_suppression_limit(self, ctx: &SessionContext) -> Result<Self> {
        let failing = self.failing_now(ctx).await?;
        let requirements = &self.generalization.requirements;
        let suppressed = crate::search::failing::failing_rows(&failing);
        let counted = ctx
            .execute_logical_plan(
                LogicalPlanBuilder::from(self.recoded.clone())
                    .aggregate(Vec::<Expr>::new(), vec![count(lit(1))])?
                    .build()?,
            )
            .await?
            .collect()
            .await?;
        let input_rows = counted
            .first()
            .and_then(|b| b.column(0).as_primitive_opt::<Int64Type>())
            .filter(|rows| !rows.is_empty())
            .map_or(0, |rows| rows.value(0) as u64);
        requirements.check_suppression(suppressed, input_rows, "nothing served")?;
        self.with_failing_classes(failing)
    }

    /// The view as DataFusion's own [`ViewTable`] (for engines that serialize plans, such as
    /// Ballista, which know views but not this type).
    pub fn into_view(self) -> ViewTable {
        self.view
    }
}

#[async_trait]
impl TableProvider for GeneralizedTable {
    fn schema(&self) -> SchemaRef {
        self.view.schema()
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    fn get_logical_plan(&'_ self) -> Option<Cow<'_, LogicalPlan>> {
        self.view.get_logical_plan()
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        self.view.supports_filters_pushdown(filters)
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.view.scan(state, projection, filters, limit).await
    }
}

/// The name of the original value of quasi-identifier `i` in [`original_pairs_plan`].
pub fn original_name(i: usize) -> String {
    format!("__anon_original_{i}")
}

/// The rows as published in mask mode (failing classes' quasi-identifiers `*`), each with its
/// original quasi-identifier values beside as [`original_name`]`(i)`: the pairs a utility
/// measure compares. `failing` gives the failing classes (as
/// [`GeneralizedTable::failing_classes_plan`] returns them), else they are found here.
pub fn original_pairs_plan(
    table_name: &str,
    inner: Arc<dyn TableProvider>,
    generalization: &Generalization,
    failing: Option<Vec<RecordBatch>>,
) -> Result<LogicalPlan> {
    let mut masked = generalization.clone();
    masked.suppression = SuppressionMode::Mask;
    let (recoded, keyed) = recoded_plan(table_name, inner, &masked, true)?;
    let table = GeneralizedTable {
        view: ViewTable::new(recoded.clone(), None),
        generalization: masked,
        recoded,
        keyed,
    };
    match failing {
        Some(failing) => Ok(table.with_failing_classes(failing)?.plan().clone()),
        None if table.generalization.suppresses() => {
            let failing = failing_classes_plan(&table.recoded, &table.generalization)?;
            suppress(&table.recoded, failing, &table.generalization)
        }
        None => Ok(table.recoded),
    }
}

/// The inner table with identifiers dropped and quasi-identifiers recoded; with
/// `with_originals`, each quasi-identifier's original value too, as [`original_name`]`(i)`.
/// With a local release (and without originals), also its keyed plan (see
/// [`GeneralizedTable::keyed_recoded_plan`]).
fn recoded_plan(
    table_name: &str,
    inner: Arc<dyn TableProvider>,
    generalization: &Generalization,
    with_originals: bool,
) -> Result<(LogicalPlan, Option<KeyedPlan>)> {
    let schema = inner.schema();
    let qis = generalization.quasi_identifiers();
    let mut qi_types = Vec::with_capacity(qis.len());
    for (name, treatment) in &generalization.columns {
        let field = schema.field_with_name(name).map_err(|_| {
            DataFusionError::Plan(format!(
                "column '{name}' of the generalization is not a column of table '{table_name}'"
            ))
        })?;
        if let ColumnTreatment::QuasiIdentifier(hierarchy) = treatment {
            hierarchy.check_column(name, field.data_type())?;
            qi_types.push(field.data_type().clone());
        }
    }
    let scan = LogicalPlanBuilder::scan(table_name, provider_as_source(inner), None)?;
    let mut keyed = None;
    // each QI's recoded expression, in QI order
    let (input, recoded): (LogicalPlanBuilder, Vec<Expr>) = match &generalization.release {
        Release::FullDomain(levels) => {
            if levels.len() != qis.len() {
                return Err(DataFusionError::Plan(format!(
                    "{} levels given for {} quasi-identifiers",
                    levels.len(),
                    qis.len()
                )));
            }
            // the hierarchies travel with the plan in a registry of this table's own, so the
            // session's registry (if any) is neither needed nor changed
            let registry = Arc::new(HierarchyRegistry::new());
            let generalize =
                ScalarUDF::new_from_impl(GeneralizeFunction::new(Arc::clone(&registry)));
            let hierarchies = generalization
                .columns
                .iter()
                .filter_map(|(name, t)| match t {
                    ColumnTreatment::QuasiIdentifier(h) => Some((name, h)),
                    _ => None,
                });
            let mut exprs = Vec::with_capacity(qis.len());
            for ((name, hierarchy), &level) in hierarchies.zip(levels) {
                hierarchy.check_level(level)?;
                let key = format!("{name}#{}", registry.names().len());
                registry.insert(&key, Arc::clone(hierarchy));
                let column = Expr::Column(Column::new(Some(table_name), name));
                exprs.push(generalize.call(vec![column, lit(key), lit(level as i64)]));
            }
            (scan, exprs)
        }
        Release::Local(local) => {
            if local.quasi_identifiers() != qis.as_slice() {
                return Err(DataFusionError::Plan(format!(
                    "the local release recodes {} where table '{table_name}' has the \
                     quasi-identifiers {}",
                    local.quasi_identifiers().join(", "),
                    qis.join(", ")
                )));
            }
            let function = LocalRecodeFunction::try_new(Arc::clone(local), &qi_types)?;
            let keys: Vec<Expr> = qis
                .iter()
                .map(|q| Expr::Column(Column::new(Some(table_name), *q)))
                .collect();
            // the inner columns kept, and the struct of labels computed once per row
            let kept_names: Vec<&String> = generalization
                .columns
                .iter()
                .filter(|(_, t)| {
                    matches!(t, ColumnTreatment::Keep | ColumnTreatment::Pseudonym { .. })
                })
                .map(|(name, _)| name)
                .collect();
            let labels = || Expr::Column(Column::from_name(LOCAL_LABELS));
            // a release that suppresses nothing needs no filter over every row
            let drops_rows =
                generalization.suppression == SuppressionMode::Drop && local.suppressed_rows() > 0;
            // the kept columns, `lookup`'s struct for each row and `more`; rows dropped by the
            // release left out
            let looked_up = |lookup: ScalarUDF, more: Vec<Expr>| -> Result<LogicalPlanBuilder> {
                let kept = kept_names
                    .iter()
                    .map(|name| Expr::Column(Column::new(Some(table_name), *name)))
                    .chain(std::iter::once(
                        lookup.call(keys.clone()).alias(LOCAL_LABELS),
                    ))
                    .chain(more);
                let input = scan.clone().project(kept)?;
                if drops_rows {
                    input.filter(not(get_field(labels(), SUPPRESSED_FIELD)))
                } else {
                    Ok(input)
                }
            };
            if !with_originals {
                let key_lookup = Arc::new(function.class_keys());
                let udf = ScalarUDF::new_from_shared_impl(Arc::clone(&key_lookup) as _);
                let columns = generalization
                    .columns
                    .iter()
                    .filter_map(|(name, t)| {
                        kept_expr(t, Expr::Column(Column::from_name(name)), name)
                    })
                    .chain(std::iter::once(
                        get_field(labels(), CLASS_KEY_FIELD).alias(CLASS_KEY_COLUMN),
                    ));
                let plan = looked_up(udf, Vec::new())?.project(columns)?.build()?;
                keyed = Some((plan, key_lookup));
            }
            let originals: Vec<Expr> = qis
                .iter()
                .enumerate()
                .filter(|_| with_originals)
                .map(|(i, q)| {
                    Expr::Column(Column::new(Some(table_name), *q)).alias(original_name(i))
                })
                .collect();
            let input = looked_up(ScalarUDF::new_from_impl(function), originals)?;
            let exprs = (0..qis.len())
                .map(|i| get_field(labels(), label_field_name(i)))
                .collect();
            (input, exprs)
        }
    };
    let mut recoded = recoded.into_iter();
    let mut exprs = Vec::with_capacity(generalization.columns.len());
    for (name, treatment) in &generalization.columns {
        match treatment {
            ColumnTreatment::Drop => {}
            ColumnTreatment::Keep | ColumnTreatment::Pseudonym { .. } => {
                let column = match &generalization.release {
                    Release::FullDomain(_) => Expr::Column(Column::new(Some(table_name), name)),
                    // already projected once, under its own name
                    Release::Local(_) => Expr::Column(Column::from_name(name)),
                };
                exprs.extend(kept_expr(treatment, column, name));
            }
            ColumnTreatment::QuasiIdentifier(_) => {
                let expr = recoded.next().ok_or_else(|| {
                    DataFusionError::Internal("a quasi-identifier without a recoding".into())
                })?;
                exprs.push(expr.alias(name));
            }
        }
    }
    if exprs.is_empty() {
        return Err(DataFusionError::Plan(format!(
            "the generalization of table '{table_name}' keeps no column"
        )));
    }
    if with_originals {
        exprs.extend(
            qis.iter()
                .enumerate()
                .map(|(i, q)| match &generalization.release {
                    Release::FullDomain(_) => {
                        Expr::Column(Column::new(Some(table_name), *q)).alias(original_name(i))
                    }
                    Release::Local(_) => Expr::Column(Column::from_name(original_name(i))),
                }),
        );
    }
    Ok((input.project(exprs)?.build()?, keyed))
}

/// What the recoded rows carry of a kept column: the column, or its pseudonyms under its
/// name; `None` for a column left out.
fn kept_expr(treatment: &ColumnTreatment, column: Expr, name: &str) -> Option<Expr> {
    match treatment {
        ColumnTreatment::Keep => Some(column),
        ColumnTreatment::Pseudonym { key, .. } => {
            Some(crate::pseudonym::PseudonymFunction::call(key, column).alias(name))
        }
        ColumnTreatment::Drop | ColumnTreatment::QuasiIdentifier(_) => None,
    }
}

/// `plan` without the person pseudonyms that are counted but not published.
fn without_unpublished(plan: LogicalPlan, generalization: &Generalization) -> Result<LogicalPlan> {
    let Some(hidden) = generalization.unpublished_person() else {
        return Ok(plan);
    };
    let columns: Vec<Expr> = plan
        .schema()
        .columns()
        .into_iter()
        .filter(|c| c.name != hidden)
        .map(Expr::Column)
        .collect();
    LogicalPlanBuilder::from(plan).project(columns)?.build()
}

/// Per class of the recoded rows: its keys, its size and whether it meets every requirement.
fn class_plan(recoded: &LogicalPlan, generalization: &Generalization) -> Result<LogicalPlan> {
    let qis = generalization.quasi_identifiers();
    let keys: Vec<Expr> = qis
        .iter()
        .map(|name| Expr::Column(Column::from_name(*name)))
        .collect();
    let mut aggregates = vec![count(lit(1)).alias(ROWS)];
    let mut conditions = vec![
        Expr::Column(Column::from_name(ROWS)).gt_eq(lit(generalization.requirements.k as i64)),
    ];
    for (i, s) in generalization.requirements.sensitive.iter().enumerate() {
        for (j, bound) in s.bounds().iter().enumerate() {
            let name = format!("__anon_measure_{i}_{j}");
            let value = Expr::Column(Column::from_name(&s.attribute));
            aggregates.push(bound.measure.call(value).alias(&name));
            conditions.push(bound.passes(Expr::Column(Column::from_name(name))));
        }
    }
    let mut classes = LogicalPlanBuilder::from(recoded.clone()).aggregate(keys, aggregates)?;
    if let (Some(requirement), Some(population)) = (
        &generalization.requirements.population,
        &generalization.population,
    ) {
        // F_E: the population's rows with the class's labels (NULL labels match NULL), 0
        // when none; see `PopulationRequirement`
        let labels: Vec<Column> = qis.iter().map(|q| Column::from_name(*q)).collect();
        let keys: Vec<Column> = (0..qis.len())
            .map(|i| Column::from_name(population_key(i)))
            .collect();
        classes = classes.join_detailed(
            population.clone(),
            JoinType::Left,
            (labels, keys),
            None,
            NullEquality::NullEqualsNull,
        )?;
        let rows = Expr::Column(Column::from_name(ROWS));
        let covered = coalesce(vec![
            Expr::Column(Column::from_name(POPULATION_ROWS)),
            lit(0i64),
        ]);
        conditions.push(requirement.passes_expr(rows, covered));
    }
    let passes = conditions
        .into_iter()
        .reduce(Expr::and)
        .unwrap_or_else(|| lit(true));
    let mut projection: Vec<Expr> = qis
        .iter()
        .enumerate()
        .map(|(i, name)| Expr::Column(Column::from_name(*name)).alias(key_name(i)))
        .collect();
    projection.push(Expr::Column(Column::from_name(ROWS)));
    // a NULL measure (no sensitive value in the class) fails: never assume privacy
    projection.push(passes.is_true().alias(PASSES));
    classes.project(projection)?.build()
}

fn failing_classes_with_rows(
    recoded: &LogicalPlan,
    generalization: &Generalization,
) -> Result<LogicalPlan> {
    let qis = generalization.quasi_identifiers();
    let mut projection: Vec<Expr> = (0..qis.len())
        .map(|i| Expr::Column(Column::from_name(key_name(i))))
        .collect();
    projection.push(Expr::Column(Column::from_name(ROWS)));
    LogicalPlanBuilder::from(class_plan(recoded, generalization)?)
        .filter(not(Expr::Column(Column::from_name(PASSES))))?
        .project(projection)?
        .build()
}

/// The failing classes' keys with a `__anon_suppressed = true` marker column.
fn failing_classes_plan(
    recoded: &LogicalPlan,
    generalization: &Generalization,
) -> Result<LogicalPlan> {
    let qis = generalization.quasi_identifiers();
    let projection: Vec<Expr> = (0..qis.len())
        .map(|i| Expr::Column(Column::from_name(key_name(i))))
        .chain(std::iter::once(lit(true).alias(SUPPRESSED)))
        .collect();
    LogicalPlanBuilder::from(failing_classes_with_rows(recoded, generalization)?)
        .project(projection)?
        .alias(CLASSES_ALIAS)?
        .build()
}

/// `batch` with its first `keys` columns cast to [`LABEL_TYPE`] (the type of the recoded
/// columns they are joined with).
fn as_label_keys(batch: &RecordBatch, keys: usize) -> Result<RecordBatch> {
    let mut fields = Vec::with_capacity(batch.num_columns());
    let mut columns = Vec::with_capacity(batch.num_columns());
    for (i, (field, column)) in batch
        .schema()
        .fields()
        .iter()
        .zip(batch.columns())
        .enumerate()
    {
        if i < keys && field.data_type() != &LABEL_TYPE {
            fields.push(Arc::new(field.as_ref().clone().with_data_type(LABEL_TYPE)));
            columns.push(cast(column, &LABEL_TYPE)?);
        } else {
            fields.push(Arc::clone(field));
            columns.push(Arc::clone(column));
        }
    }
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}

/// The recoded rows with the rows of `failing` classes dropped or masked.
fn suppress(
    recoded: &LogicalPlan,
    failing: LogicalPlan,
    generalization: &Generalization,
) -> Result<LogicalPlan> {
    let qis = generalization.quasi_identifiers();
    let left_keys: Vec<Column> = qis.iter().map(|n| Column::from_name(*n)).collect();
    let right_keys: Vec<Column> = (0..qis.len())
        .map(|i| Column::from_name(key_name(i)))
        .collect();
    let output: Vec<String> = recoded
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let join = |join_type: JoinType| {
        LogicalPlanBuilder::from(recoded.clone()).join_detailed(
            failing.clone(),
            join_type,
            (left_keys.clone(), right_keys.clone()),
            None,
            // a NULL quasi-identifier is a value of its class, as in GROUP BY
            NullEquality::NullEqualsNull,
        )
    };
    let plan = match generalization.suppression {
        // an anti join passes the other rows through as they are: no marker column to add,
        // filter on and project away over every row
        SuppressionMode::Drop => join(JoinType::LeftAnti)?,
        SuppressionMode::Mask => {
            let suppressed = Expr::Column(Column::from_name(SUPPRESSED)).is_not_null();
            let mut exprs = Vec::with_capacity(output.len());
            for name in &output {
                let column = Expr::Column(Column::from_name(name));
                exprs.push(if qis.contains(&name.as_str()) {
                    when(
                        suppressed.clone(),
                        lit(ScalarValue::Utf8View(Some(TOP_LABEL.to_string()))),
                    )
                    .otherwise(column)?
                    .alias(name)
                } else {
                    column
                });
            }
            join(JoinType::Left)?.project(exprs)?
        }
    };
    plan.build()
}
