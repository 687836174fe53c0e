//! Where a generalized release goes, decided and checked before anything is read: Parquet
//! files, or a Delta table (`--format delta`, `[output] format = "delta"`, or a path that is
//! a Delta table already), and what a Delta commit records of the release.

use crate::errors::{Opt, UsageError};
use datafusion::error::{DataFusionError, Result};
use serde_json::{Value, json};

use crate::policy::Policy;
use crate::policy::cloaking::Cloaking;
use crate::policy::perturbation::Perturbation;
use crate::publish::{self, Output};
use crate::search::release::Release;
use crate::storage::Location;

/// How the caller asked the release to be written.
#[derive(Debug, Clone, Copy, Default)]
pub struct OutputRequest {
    /// Publish as a Delta table (else: when the policy's `[output] format` says so, or the
    /// output already is one).
    pub delta: bool,
    /// Replace what is there (a Delta table: a new version replacing its rows).
    pub overwrite: bool,
    /// Add the release to an existing Delta table as a new version.
    pub append: bool,
}

impl OutputRequest {
    /// The request for output format `format` as the shells name it (`parquet` or `delta`;
    /// `None`: decided by the policy and the output path), appended or not.
    pub fn new(format: Option<&str>, append: bool) -> Result<Self> {
        let delta = match format {
            None | Some("parquet") => false,
            Some("delta") => true,
            Some(other) => {
                return Err(DataFusionError::Plan(format!(
                    "unknown output format '{other}' (parquet or delta)"
                )));
            }
        };
        if format == Some("parquet") && append {
            return Err(UsageError::new()
                .opt(Opt::Append)
                .text(" adds a version to a Delta table; it does not apply to Parquet")
                .into());
        }
        Ok(Self {
            delta,
            overwrite: false,
            append,
        })
    }
}

/// An output checked before anything is read; the release's record is added once it is known
/// ([`PlannedOutput::output`]).
#[derive(Debug)]
pub enum PlannedOutput {
    Files {
        location: Location,
        overwrite: bool,
    },
    #[cfg(feature = "delta")]
    Delta(crate::publish::delta::DeltaTarget),
}

impl PlannedOutput {
    /// Checks `out` for `request`: refused as [`publish::check_output`] refuses it (Parquet),
    /// or as [`crate::publish::delta::check_target`] does (Delta).
    pub async fn check(policy: &Policy, out: &Location, request: OutputRequest) -> Result<Self> {
        if is_delta(policy, out, request).await? {
            return Self::delta(policy, out, request).await;
        }
        if request.append {
            return Err(UsageError::new()
                .text(format!("output {out} is not a Delta table: "))
                .opt(Opt::Append)
                .text(" adds a version to one (give ")
                .opt(Opt::FormatDelta)
                .text(" to create one)")
                .into());
        }
        if !policy.partition_by().is_empty() {
            return Err(UsageError::new()
                .text(format!(
                    "output {out}: output.partition_by partitions a Delta table; give "
                ))
                .opt(Opt::FormatDelta)
                .text(" (or [output] format = \"delta\") or remove it")
                .into());
        }
        publish::check_output(out, policy.input(), request.overwrite, policy.storage()).await?;
        Ok(Self::Files {
            location: out.clone(),
            overwrite: request.overwrite,
        })
    }

    #[cfg(feature = "delta")]
    async fn delta(policy: &Policy, out: &Location, request: OutputRequest) -> Result<Self> {
        // the overlap rules of any output (never over or inside the input); existence is the
        // Delta check's to judge
        publish::check_target(
            out,
            policy.input(),
            true,
            policy.storage(),
            false,
            publish::Written::Output,
        )
        .await?;
        let target = crate::publish::delta::check_target(
            out,
            policy.storage(),
            request.overwrite,
            request.append,
            policy.partition_by(),
        )
        .await?;
        if target.mode == crate::publish::delta::WriteMode::Append {
            // before the work: a generalization can append only as a full-domain release
            use crate::policy::ReleaseMethod;
            let method = match policy.release_method() {
                ReleaseMethod::Cloaking => "cloaking",
                ReleaseMethod::Perturbation => "perturbation",
                ReleaseMethod::Generalization | ReleaseMethod::Bucketization => "full-domain",
            };
            crate::publish::delta::check_append_method(&target, method).await?;
        }
        Ok(Self::Delta(target))
    }

    #[cfg(not(feature = "delta"))]
    async fn delta(_: &Policy, out: &Location, _: OutputRequest) -> Result<Self> {
        Err(DataFusionError::Plan(format!(
            "output {out}: publishing a Delta table needs the engine's `delta` feature, which \
             this build lacks"
        )))
    }

    /// Where the release goes.
    pub fn location(&self) -> &Location {
        match self {
            Self::Files { location, .. } => location,
            #[cfg(feature = "delta")]
            Self::Delta(target) => &target.location,
        }
    }

    /// Refuses, before anything is read, an append of a release made by `method` (as a commit
    /// records it) that the table cannot take: what the policy alone could not tell, such as
    /// a local recoding's (see [`crate::publish::delta::check_append_method`]).
    #[cfg_attr(not(feature = "delta"), allow(unused_variables))]
    pub async fn check_append_of(&self, method: &str) -> Result<()> {
        #[cfg(feature = "delta")]
        if let Self::Delta(target) = self
            && target.mode == crate::publish::delta::WriteMode::Append
        {
            crate::publish::delta::check_append_method(target, method).await?;
        }
        Ok(())
    }

    /// Whether the release goes to a Delta table.
    pub fn is_delta(&self) -> bool {
        !matches!(self, Self::Files { .. })
    }

    /// The output to publish to, a Delta commit recording `info` (called only for Delta).
    #[cfg_attr(not(feature = "delta"), allow(unused_variables))]
    pub fn output(&self, info: impl FnOnce() -> Value) -> Output {
        match self {
            Self::Files {
                location,
                overwrite,
            } => Output::Files {
                location: location.clone(),
                overwrite: *overwrite,
            },
            #[cfg(feature = "delta")]
            Self::Delta(target) => Output::Delta {
                target: target.clone(),
                info: info(),
            },
        }
    }
}

/// Whether `out` is to be a Delta table: asked for, said by the policy, or one already.
#[cfg_attr(not(feature = "delta"), allow(unused_variables))]
async fn is_delta(policy: &Policy, out: &Location, request: OutputRequest) -> Result<bool> {
    if request.delta || policy.output_is_delta() {
        return Ok(true);
    }
    #[cfg(feature = "delta")]
    if crate::tables::delta::is_delta_table(out, policy.storage()).await? {
        return Ok(true);
    }
    Ok(false)
}

/// What a Delta commit records of a release (`commitInfo.anonymity`): the command, the
/// method and algorithm, the requirements, the levels (full-domain), the metric's value, the
/// input's Delta version and the policy's hash. Names and figures only: never a value of the
/// data, nor the row-order seed (which undoes the shuffle). The publish adds the verified
/// figures (`figures`: rows, classes, k, suppressed, l and t per sensitive attribute).
pub fn release_info(
    command: &str,
    policy: &Policy,
    release: &Release,
    algorithm: Option<&str>,
    metric: Option<(&str, f64)>,
) -> Value {
    let levels: Option<serde_json::Map<String, Value>> = release.levels().map(|levels| {
        policy
            .quasi_identifiers()
            .into_iter()
            .zip(levels.iter())
            .map(|((qi, _), level)| (qi, json!(level)))
            .collect()
    });
    with_provenance(
        json!({
            "command": command,
            "method": release.kind(),
            "algorithm": algorithm,
            "requirements": policy.requirements(),
            "suppression": policy.suppression(),
            "levels": levels,
            "metric": metric.map(|(name, _)| name),
            "metric_value": metric.map(|(_, value)| value),
        }),
        policy,
    )
}

/// What a Delta commit records of a perturbed release: the command, `perturbation`, each
/// attribute's transformation (names, as in the policy), microaggregation's k and strata,
/// the input's Delta version and the policy's hash; never the seed (with it, the noise can be
/// subtracted). The publish adds the verified figures (`figures`: rows, classes, k).
pub fn perturbation_info(command: &str, policy: &Policy, perturbation: &Perturbation) -> Value {
    let attributes: serde_json::Map<String, Value> = perturbation
        .attributes
        .iter()
        .map(|(name, transformation)| (name.clone(), json!(transformation.name())))
        .collect();
    let microaggregated = !perturbation.microaggregated().is_empty();
    with_provenance(
        json!({
            "command": command,
            "method": "perturbation",
            "attributes": attributes,
            "k": microaggregated.then_some(perturbation.micro.k),
            "strata": perturbation.strata,
        }),
        policy,
    )
}

/// What a Delta commit records of a cloaked location release: the command, `cloaking`, the
/// variant, k, the tolerances (largest cell side, longest window) and the columns cloaked,
/// the input's Delta version and the policy's hash; never the seed (it orders the rows;
/// the pseudonyms have a key of their own, drawn for each release). The publish adds the verified figures (`figures`: rows, labels, the
/// fewest subjects of a label).
pub fn cloaking_info(command: &str, policy: &Policy, cloaking: &Cloaking) -> Value {
    let options = &cloaking.options;
    with_provenance(
        json!({
            "command": command,
            "method": "cloaking",
            "variant": options.variant.name(),
            "k": options.k,
            "max_cell_side_m": options.max_cell_side_m,
            "max_window_s": options.max_window_us() as f64 / 1e6,
            "columns": {
                "latitude": cloaking.latitude,
                "longitude": cloaking.longitude,
                "time": cloaking.time,
                "subject": cloaking.subject,
            },
        }),
        policy,
    )
}

/// `info` with what every commit records of where a release comes from: the input's Delta
/// version, the policy's hash and the tool.
fn with_provenance(mut info: Value, policy: &Policy) -> Value {
    info["input_version"] = json!(policy.input_version());
    info["policy_hash"] = json!(format!("blake3:{}", policy.hash()));
    info["tool"] = json!(concat!("datafusion-anonymity ", env!("CARGO_PKG_VERSION")));
    info
}
