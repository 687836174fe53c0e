//! What a bound policy builds for the search and for publishing: its frequency set, the
//! [`GeneralizedTable`] of a release, the population's counts, and `<name>_anon`. Methods of
//! [`Policy`] kept apart from `policy`, which describes and checks a policy and imports
//! nothing of the search or the provider (they import it).

use std::sync::Arc;

use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;

use crate::policy::{PersonPublished, Policy, Role};
use crate::search::release::Release;

impl Policy {
    /// Registers the input as [`Policy::table_name`] on `ctx` (with the crate's functions,
    /// if not yet there), checks the policy against its schema and data, and registers each
    /// quasi-identifier's hierarchy under the column's name for `generalize(col, 'col',
    /// level)`. With a fixed transformation, also registers `<name>_anon`, the
    /// [`GeneralizedTable`](crate::provider::GeneralizedTable) serving the published data.
    pub async fn register(&mut self, ctx: &SessionContext) -> Result<()> {
        self.register_with(ctx, true).await?;
        if let Some(levels) = self.transformation() {
            // settled now when dropping classes changes what the kept ones are measured
            // against (drop with t, β or δ: scans of the input), so that SQL readers see what
            // `anon apply` would publish
            let table = self
                .generalized_table(ctx, Release::FullDomain(levels))
                .await?
                .settled(ctx)
                .await?;
            ctx.register_table(format!("{}_anon", self.table_name()), Arc::new(table))?;
        }
        Ok(())
    }

    /// The frequency set of the registered input for the search (every quasi-identifier,
    /// the constrained sensitive attributes), with the population's counts attached when the
    /// policy requires k-map or δ-presence. `progress` counts the input rows scanned.
    pub async fn frequency_set(
        &self,
        ctx: &SessionContext,
        progress: Option<Arc<crate::progress::ScanProgress>>,
    ) -> Result<crate::search::FrequencySet> {
        let mut freq = crate::search::FrequencySet::build_with_progress(
            ctx,
            self.table_name(),
            &self.quasi_identifiers(),
            &self.requirements().constrained_attributes(),
            progress,
        )
        .await
        .map_err(|e| self.locate_input_error(e))?;
        freq.set_local_labels(self.local_labels());
        freq.set_generalization(&self.set_generalized(), self.set_labels());
        freq.set_weights(&self.weights()).map_err(|e| {
            DataFusionError::Plan(format!("policy {}: {}", self.source(), e.message()))
        })?;
        // attached whenever the policy has a population: local releases then count each
        // class's F_E, which the report's journalist and marketer risks need
        if let (Some(table), Some(location)) = (self.population_table(), self.population()) {
            let counts = crate::search::population::PopulationCounts::load(
                ctx,
                table,
                &location.to_string(),
                freq.qis(),
            )
            .await?;
            freq.set_population(counts);
        }
        Ok(freq)
    }

    /// The [`GeneralizedTable`](crate::provider::GeneralizedTable) of the registered input
    /// under `release` (full-domain levels, one per quasi-identifier, or a local recoding),
    /// suppressing per the policy.
    pub async fn generalized_table(
        &self,
        ctx: &SessionContext,
        release: Release,
    ) -> Result<crate::provider::GeneralizedTable> {
        let inner = ctx.table_provider(self.table_name()).await?;
        let release_levels = release.levels().map(<[usize]>::to_vec);
        let mut generalization = self.generalization(release)?;
        // a local release's classes were judged against the population when it was built
        if let (Some(_), Some(levels)) = (&self.requirements().population, release_levels) {
            generalization.population = self.population_counts_plan(ctx, &levels).await?;
        }
        crate::provider::GeneralizedTable::try_new(self.table_name(), inner, generalization)
    }

    /// The population's rows per label tuple at `levels` (one per quasi-identifier),
    /// recoded with the registered hierarchies: columns
    /// [`population_key`](crate::provider::population_key)`(i)` and
    /// [`POPULATION_ROWS`](crate::provider::POPULATION_ROWS); `None` without `[population]`.
    /// The generalized table joins its classes with it (k-map, δ-presence) and publishing
    /// verifies the written classes with it.
    pub async fn population_counts_plan(
        &self,
        ctx: &SessionContext,
        levels: &[usize],
    ) -> Result<Option<datafusion::logical_expr::LogicalPlan>> {
        use crate::provider::{POPULATION_ROWS, population_key};
        let Some(table) = self.population_table() else {
            return Ok(None);
        };
        let qis = self.quasi_identifiers();
        let labels = qis
            .iter()
            .zip(levels)
            .enumerate()
            .map(|(i, ((qi, _), &level))| {
                Ok(crate::generalize::generalize_expr(
                    ctx,
                    datafusion::prelude::ident(qi),
                    qi,
                    level,
                )?
                .alias(population_key(i)))
            })
            .collect::<Result<Vec<_>>>()?;
        let keys = (0..qis.len())
            .map(|i| datafusion::prelude::ident(population_key(i)))
            .collect();
        let plan = ctx
            .table(table)
            .await?
            .select(labels)?
            .aggregate(
                keys,
                vec![datafusion::functions_aggregate::count::count_all().alias(POPULATION_ROWS)],
            )?
            .logical_plan()
            .clone();
        Ok(Some(plan))
    }

    /// What the generalized table does with each column under `release`.
    pub fn generalization(&self, release: Release) -> Result<crate::provider::Generalization> {
        use crate::provider::{ColumnTreatment, Generalization};
        let qis = self.quasi_identifiers();
        if let Some(levels) = release.levels() {
            if levels.len() != qis.len() {
                return Err(DataFusionError::Plan(format!(
                    "{} levels given for {} quasi-identifiers",
                    levels.len(),
                    qis.len()
                )));
            }
            for ((_, hierarchy), &level) in qis.iter().zip(levels) {
                hierarchy.check_level(level)?;
            }
        }
        let mut columns = Vec::with_capacity(self.columns().len());
        // one key per generalized table: every row of a release gets its person's pseudonym
        // under the same key, a new release a new key
        let person_key = match self.person() {
            Some(p) if p.published != PersonPublished::AsIs => {
                Some((p.name.as_str(), crate::pseudonym::PseudonymKey::random()?))
            }
            _ => None,
        };
        for column in self.columns() {
            let treatment = match column.role {
                Role::Identifier => match &person_key {
                    Some((name, key)) if *name == column.name => ColumnTreatment::Pseudonym {
                        key: key.clone(),
                        published: self.person().map(|p| p.published)
                            == Some(PersonPublished::Pseudonym),
                    },
                    _ => ColumnTreatment::Drop,
                },
                Role::QuasiIdentifier => {
                    let hierarchy = column.hierarchy().cloned().ok_or_else(|| {
                        DataFusionError::Plan(format!(
                            "the hierarchy of '{}' is sized from the data: register the policy first",
                            column.name
                        ))
                    })?;
                    ColumnTreatment::QuasiIdentifier(hierarchy)
                }
                Role::Sensitive | Role::Insensitive => ColumnTreatment::Keep,
            };
            columns.push((column.name.clone(), treatment));
        }
        Ok(Generalization {
            columns,
            release,
            requirements: self.requirements().clone(),
            suppression: self.requirements().suppression,
            population: None,
        })
    }
}
