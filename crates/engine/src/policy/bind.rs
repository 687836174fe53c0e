//! Binding a policy to its data: the input registered on a session and the policy checked
//! against it (every column has a role, every attribute exists, hierarchies fit the column
//! types, value trees cover every value, levels exist).

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, SchemaRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::prelude::SessionContext;

use super::{PendingHierarchy, Policy, policy_error, quote_ident};
use crate::generalize::Hierarchy;
use crate::tables::TableFormat;

impl Policy {
    /// [`Policy::register`] without `<name>_anon` (the publishing commands build their own
    /// generalized table), optionally without the scan that checks every value of a value
    /// tree's column is a leaf — for callers that check it themselves in a scan they need
    /// anyway (the search's frequency set does). Masks sized from the data still scan. The
    /// population table of k-map and δ-presence is registered as `<name>_population`.
    pub async fn register_with(&mut self, ctx: &SessionContext, check_trees: bool) -> Result<()> {
        if crate::generalize::hierarchy_registry(ctx).is_none() {
            crate::register(ctx)?;
        }
        crate::storage::register_store(ctx, &self.input, &self.storage)?;
        if let Some(output) = &self.output {
            crate::storage::register_store(ctx, output, &self.storage)?;
        }
        self.input_version = crate::tables::register_input(
            ctx,
            &self.name,
            &self.input,
            &self.storage,
            &self.csv_options(),
            &self.input_read,
        )
        .await?;
        let schema = ctx.table_provider(self.name.as_str()).await?.schema();
        if crate::tables::table_format(&self.input.datafusion_path())? == TableFormat::Csv {
            self.locate_unfit_csv_columns(&schema).await?;
        }
        self.bind_schema(&schema)?;
        if crate::tables::table_format(&self.input.datafusion_path())? != TableFormat::Csv {
            self.check_types(&schema)?;
        }
        self.check_data(ctx, check_trees).await?;
        for (column, hierarchy) in self.quasi_identifiers() {
            crate::generalize::register_hierarchy(ctx, &column, hierarchy)?;
        }
        if let Some(population) = &self.population {
            crate::storage::register_store(ctx, population, &self.storage)?;
            let table = format!("{}_population", self.name);
            crate::tables::register_location_with(
                ctx,
                &table,
                population,
                &self.storage,
                &self.csv_options(),
            )
            .await?;
            let columns = ctx.table_provider(table.as_str()).await?.schema();
            for (qi, _) in self.quasi_identifiers() {
                if columns.field_with_name(&qi).is_err() {
                    return Err(policy_error(
                        &self.source,
                        format!(
                            "quasi-identifier '{qi}' is not a column of the population {population}"
                        ),
                    ));
                }
            }
            self.population_table = Some(table);
        }
        self.schema = Some(schema);
        Ok(())
    }

    /// A CSV column whose inferred type its hierarchy does not fit (a date column with one
    /// value that is not a date, read as text): an error naming the file, the line of the
    /// value that changed the inferred type (not the value), that type and what the hierarchy
    /// needs. Columns the policy gives a `type` were converted, or refused value by value,
    /// when the input was registered.
    async fn locate_unfit_csv_columns(&self, schema: &SchemaRef) -> Result<()> {
        for column in self.columns.iter().filter(|c| c.data_type.is_none()) {
            let (Some(hierarchy), Ok(field)) =
                (column.hierarchy(), schema.field_with_name(&column.name))
            else {
                continue;
            };
            let Err(unfit) = hierarchy.check_column(&column.name, field.data_type()) else {
                continue;
            };
            let fits = Arc::clone(hierarchy);
            let change = crate::tables::csv::locate_type_change(
                &self.input,
                &self.storage,
                &column.name,
                move |data_type| fits.accepts(data_type),
            )
            .await?;
            let Some(change) = change else { continue };
            let fix = match change
                .before
                .as_ref()
                .and_then(crate::tables::ColumnType::of)
            {
                Some(ty) => format!(
                    "correct the value, or give the attribute type = \"{}\" (with [input] \
                     bad_values = \"null\" to read such values as NULL)",
                    ty.name()
                ),
                None => "correct the value".to_string(),
            };
            return Err(policy_error(
                &self.source,
                format!(
                    "{}, and {}; {fix}",
                    change.describe(&column.name),
                    unfit.message()
                ),
            ));
        }
        Ok(())
    }

    /// Orders the columns as the schema does and checks every column has a role, every
    /// attribute exists and every hierarchy fits its column's type.
    fn bind_schema(&mut self, schema: &SchemaRef) -> Result<()> {
        let err = |message: String| policy_error(&self.source, message);
        for column in &self.columns {
            if schema.field_with_name(&column.name).is_err() {
                return Err(err(format!(
                    "attribute '{}' is not a column of {} (its columns: {})",
                    column.name,
                    self.input,
                    column_list(schema)
                )));
            }
        }
        let without_role: Vec<&str> = schema
            .fields()
            .iter()
            .map(|f| f.name().as_str())
            .filter(|name| !self.columns.iter().any(|c| c.name == *name))
            .collect();
        // pandas writes an index that is not a plain row number as `__index_level_N__`
        // (`DataFrame.to_parquet` without `index=False`): named, so that the fix is plain
        if let Some(index) = without_role.iter().find(|name| is_pandas_index(name)) {
            return Err(err(format!(
                "column '{index}' of {} is the index pandas wrote (to_parquet without \
                 index=False) and has no role; write the data without it (index=False, or \
                 reset_index() to keep it as a named column), or give it one under \
                 [attributes], e.g. {index} = {{ role = \"identifier\" }} to leave it out",
                self.input
            )));
        }
        if !without_role.is_empty() {
            return Err(err(format!(
                "column(s) {} of {} have no role; give each one under [attributes] \
                 (identifier, quasi_identifier, sensitive or insensitive)",
                quoted(&without_role),
                self.input
            )));
        }
        let mut ordered = Vec::with_capacity(self.columns.len());
        for field in schema.fields() {
            if let Some(i) = self.columns.iter().position(|c| c.name == *field.name()) {
                let column = self.columns.swap_remove(i);
                if let Some(h) = column.hierarchy() {
                    h.check_column(&column.name, field.data_type())
                        .map_err(|e| err(e.message().to_string()))?;
                }
                ordered.push(column);
            }
        }
        self.columns = ordered;
        let mut sensitive = std::mem::take(&mut self.requirements.sensitive);
        sensitive.sort_by_key(|s| schema.index_of(&s.attribute).unwrap_or(usize::MAX));
        self.requirements.sensitive = sensitive;
        for s in &self.requirements.sensitive {
            let data_type = schema.field_with_name(&s.attribute)?.data_type();
            if let Some(bound) = s
                .bounds()
                .iter()
                .find(|b| b.measure.needs_ordered_attribute())
                && !is_orderable(data_type)
            {
                let (what, hint) = bound.measure.ordered_name_and_hint();
                return Err(err(format!(
                    "sensitive attribute '{}' has type {data_type}: {what} needs a numeric, \
                     decimal or temporal column{hint}",
                    s.attribute
                )));
            }
        }
        Ok(())
    }

    /// Input that is not CSV has its own types: an attribute's `type` must match its column's
    /// (Parquet is not converted), so that a policy written for one file does not silently
    /// mean something else for another.
    fn check_types(&self, schema: &SchemaRef) -> Result<()> {
        for column in &self.columns {
            let (Some(ty), Ok(field)) = (column.data_type, schema.field_with_name(&column.name))
            else {
                continue;
            };
            if !ty.matches(field.data_type()) {
                return Err(policy_error(
                    &self.source,
                    format!(
                        "attribute '{}' has type = \"{}\", but it is {} in {}: type converts \
                         CSV columns only (remove it, or give the column's own type)",
                        column.name,
                        ty.name(),
                        field.data_type(),
                        self.input
                    ),
                ));
            }
        }
        Ok(())
    }

    /// When a scan of the registered input failed on its data (`error`, an Arrow error) and the
    /// input is CSV, the error naming the file, the line and the column where the input no
    /// longer fits the table registered from it; otherwise `error` itself.
    pub fn locate_input_error(&self, error: DataFusionError) -> DataFusionError {
        let path = self.input.datafusion_path();
        if !matches!(error.find_root(), DataFusionError::ArrowError(..))
            || !matches!(crate::tables::table_format(&path), Ok(TableFormat::Csv))
        {
            return error;
        }
        let Some(schema) = &self.schema else {
            return error;
        };
        match crate::tables::check_csv(&path, Arc::clone(schema), &self.csv_options()) {
            Err(located) => located,
            Ok(()) => error,
        }
    }

    /// The scan [`Policy::register_with`] skips without `check_trees`: every value of a value
    /// tree's column must be a leaf, counted over the whole column. Recoding refuses a value
    /// missing from its tree by itself, but counts only the batch it met; `anon apply`
    /// registers without the check and runs it only after such a refusal, for the whole count.
    pub async fn check_tree_values(&mut self, ctx: &SessionContext) -> Result<()> {
        self.check_data(ctx, true).await
    }

    /// One scan of the quasi-identifiers: the longest value of masks sized from the data,
    /// and the distinct values of value trees (each must be a leaf).
    async fn check_data(&mut self, ctx: &SessionContext, check_trees: bool) -> Result<()> {
        let mut selects = Vec::new();
        let mut wanted = Vec::new();
        for (i, column) in self.columns.iter().enumerate() {
            let ident = quote_ident(&column.name);
            match &column.hierarchy {
                Some(PendingHierarchy::MaskFromData) => {
                    selects.push(format!("max(character_length(CAST({ident} AS VARCHAR)))"));
                    wanted.push(i);
                }
                Some(PendingHierarchy::Ready(h)) if check_trees && h.leaf_count().is_some() => {
                    selects.push(format!("array_agg(DISTINCT {ident})"));
                    wanted.push(i);
                }
                _ => {}
            }
        }
        if selects.is_empty() {
            return Ok(());
        }
        let sql = format!(
            "SELECT {} FROM {}",
            selects.join(", "),
            quote_ident(&self.name)
        );
        let batches = ctx.sql(&sql).await?.collect().await?;
        let Some(batch) = batches.first() else {
            return Ok(());
        };
        for (slot, &i) in wanted.iter().enumerate() {
            let values = batch.column(slot);
            let column = &mut self.columns[i];
            match &column.hierarchy {
                Some(PendingHierarchy::MaskFromData) => {
                    let length = values
                        .as_primitive_opt::<datafusion::arrow::datatypes::Int32Type>()
                        .and_then(|a| a.is_valid(0).then(|| a.value(0)))
                        .unwrap_or(0)
                        .max(0) as usize;
                    let hierarchy = Hierarchy::mask(column.name.clone(), length);
                    column.hierarchy = Some(PendingHierarchy::Ready(Arc::new(hierarchy)));
                }
                Some(PendingHierarchy::Ready(h)) => {
                    let list = values.as_list::<i32>();
                    if list.is_valid(0) {
                        let distinct = list.value(0);
                        h.validate_values(&column.name, &distinct)
                            .map_err(|e| policy_error(&self.source, e.message()))?;
                    }
                }
                None => {}
            }
        }
        if let Some(levels) = &self.transformation {
            for column in &self.columns {
                if let (Some(level), Some(h)) = (levels.get(&column.name), column.hierarchy()) {
                    h.check_level(*level)
                        .map_err(|e| policy_error(&self.source, e.message()))?;
                }
            }
        }
        Ok(())
    }
}

fn is_orderable(data_type: &DataType) -> bool {
    data_type.is_numeric()
        || data_type.is_temporal()
        || matches!(data_type, DataType::Dictionary(_, v) if is_orderable(v))
}

fn column_list(schema: &SchemaRef) -> String {
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    names.join(", ")
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether `name` is the name pandas gives an index column it writes with the data
/// (`__index_level_0__`, `__index_level_1__`, ... for the levels of an unnamed index).
fn is_pandas_index(name: &str) -> bool {
    name.strip_prefix("__index_level_")
        .and_then(|rest| rest.strip_suffix("__"))
        .is_some_and(|level| !level.is_empty() && level.bytes().all(|b| b.is_ascii_digit()))
}
