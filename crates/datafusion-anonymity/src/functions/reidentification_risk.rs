//! `reidentification_risk([person_id])`: prosecutor risk of each record of the class.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Float64Array, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, UInt64Type};
use datafusion::error::Result;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Documentation, EmitTo, Expr, GroupsAccumulator,
    Signature, Volatility, lit,
};

use super::class_distribution::{ClassDistributionFunction, Kind};
use super::common::{SingleClass, doc, selected};

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    doc(
        "Prosecutor re-identification risk of each record of the equivalence class \
         (El Emam & Dankar 2008): 1 / |E|. With a person identifier: 1 / (distinct persons), \
         persons counted as by k_anonymity(person_id) (NULL identifiers add no person; a \
         class of NULL identifiers only is one). NULL only for an empty input. The \
         table's maximum risk is 1/k; its average risk is #classes / rows.",
        "reidentification_risk([person_id])",
    )
    .with_argument("person_id", "Optional column identifying the person; any type.")
    .with_sql_example(
        "```sql\n> SELECT zip, age, reidentification_risk() AS risk FROM patients GROUP BY zip, age;\n```",
    )
    .build()
});

/// `reidentification_risk()` becomes the row-counting form over a constant (see
/// [`RowRisk`]).
fn row_risk(filter: Option<Box<Expr>>) -> Expr {
    Expr::AggregateFunction(AggregateFunction::new_udf(
        row_risk_udaf(),
        vec![lit(1i64)],
        false,
        filter,
        vec![],
        None,
    ))
}

/// The `reidentification_risk` aggregate function.
pub fn reidentification_risk_udaf() -> Arc<AggregateUDF> {
    static INSTANCE: LazyLock<Arc<AggregateUDF>> = LazyLock::new(|| {
        Arc::new(AggregateUDF::new_from_impl(ClassDistributionFunction::new(
            "reidentification_risk",
            Kind::PersonRisk,
            Some(row_risk),
            &DOCUMENTATION,
        )))
    });
    Arc::clone(&INSTANCE)
}

/// Internal: `1 / rows` of the class; its one argument only carries the batch length.
pub fn row_risk_udaf() -> Arc<AggregateUDF> {
    static INSTANCE: LazyLock<Arc<AggregateUDF>> =
        LazyLock::new(|| Arc::new(AggregateUDF::new_from_impl(RowRisk::default())));
    Arc::clone(&INSTANCE)
}

/// The row-counting form of `reidentification_risk()`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct RowRisk {
    signature: Signature,
}

impl Default for RowRisk {
    fn default() -> Self {
        Self {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl AggregateUDFImpl for RowRisk {
    fn name(&self) -> &str {
        "__anon_reidentification_risk_rows"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let types: Vec<DataType> = args
            .expr_fields
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        Ok(Box::new(SingleClass::try_new(
            RowCounts::default(),
            &types,
        )?))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(
            format_state_name(args.name, "rows"),
            DataType::UInt64,
            true,
        ))])
    }

    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(
        &self,
        _args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(RowCounts::default()))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCUMENTATION)
    }
}

/// Rows per class.
#[derive(Debug, Default)]
struct RowCounts {
    rows: Vec<u64>,
}

impl GroupsAccumulator for RowCounts {
    fn update_batch(
        &mut self,
        _values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.rows.resize(total_num_groups.max(self.rows.len()), 0);
        for (row, &group) in group_indices.iter().enumerate() {
            self.rows[group] += u64::from(selected(opt_filter, row));
        }
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let rows = emit_to.take_needed(&mut self.rows);
        Ok(Arc::new(
            rows.into_iter()
                .map(|r| (r > 0).then(|| 1.0 / r as f64))
                .collect::<Float64Array>(),
        ))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let rows = emit_to.take_needed(&mut self.rows);
        Ok(vec![Arc::new(UInt64Array::from(rows))])
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.rows.resize(total_num_groups.max(self.rows.len()), 0);
        let partial = values[0].as_primitive::<UInt64Type>();
        for (row, &group) in group_indices.iter().enumerate() {
            self.rows[group] += partial.value(row);
        }
        Ok(())
    }

    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        let rows: UInt64Array = (0..values[0].len())
            .map(|row| Some(u64::from(selected(opt_filter, row))))
            .collect();
        Ok(vec![Arc::new(rows)])
    }

    fn size(&self) -> usize {
        self.rows.capacity() * size_of::<u64>()
    }
}
