//! Internal `__anon_sa_histogram(s)`: the class's histogram of a sensitive attribute, as the
//! state that the t-closeness finalizers read (see [`super::whole_table`]).

use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::error::Result;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Documentation, GroupsAccumulator, Signature,
    Volatility,
};

use super::common::{SingleClass, doc};
use super::histogram::{
    HistogramGroupsAccumulator, HistogramOutput, histogram_state_fields, histogram_struct_type,
};

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    doc(
        "Internal: the class's histogram of an attribute (distinct values and their counts), \
         produced by the rewrite of t_closeness and t_closeness_ordered.",
        "__anon_sa_histogram(sensitive)",
    )
    .build()
});

/// The internal histogram aggregate.
pub fn sa_histogram_udaf() -> Arc<AggregateUDF> {
    static INSTANCE: LazyLock<Arc<AggregateUDF>> =
        LazyLock::new(|| Arc::new(AggregateUDF::new_from_impl(SaHistogram::default())));
    Arc::clone(&INSTANCE)
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SaHistogram {
    signature: Signature,
}

impl Default for SaHistogram {
    fn default() -> Self {
        Self {
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl AggregateUDFImpl for SaHistogram {
    fn name(&self) -> &str {
        "__anon_sa_histogram"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(histogram_struct_type(&arg_types[0]))
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let value_type = args.expr_fields[0].data_type().clone();
        let inner = HistogramGroupsAccumulator::try_new(&value_type, HistogramOutput::Histogram)?;
        Ok(Box::new(SingleClass::try_new(inner, &[value_type])?))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(histogram_state_fields(
            args.name,
            args.input_fields[0].data_type(),
        ))
    }

    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(HistogramGroupsAccumulator::try_new(
            args.expr_fields[0].data_type(),
            HistogramOutput::Histogram,
        )?))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCUMENTATION)
    }
}
