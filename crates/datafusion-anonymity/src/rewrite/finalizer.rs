//! The window functions `__anon_*_final(state) OVER ()` that finalize whole-table aggregates:
//! they see every class's state at once (one row per class) and return each class's value.
//!
//! `__anon_histogram_final(histogram, functions) OVER ()` finalizes several functions of one
//! shared histogram at once (t-closeness in both forms, β, enhanced β, δ): the table's values
//! are interned once for all of them, and the values come back as one struct, a field per
//! function (those not asked for by the `functions` bit mask are NULL).

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, StructArray, new_null_array};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields, Int64Type};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::function::{PartitionEvaluatorArgs, WindowUDFFieldArgs};
use datafusion::logical_expr::{
    Documentation, PartitionEvaluator, Signature, Volatility, WindowUDF, WindowUDFImpl,
};

use crate::functions::finalize::{finalize, finalize_histograms};
use crate::functions::table_histograms::TableHistograms;
use crate::functions::whole_table::WholeTableKind;

/// The finalizer of `kind`.
pub fn finalizer_udwf(kind: WholeTableKind) -> Arc<WindowUDF> {
    static INSTANCES: LazyLock<Vec<Arc<WindowUDF>>> = LazyLock::new(|| {
        WholeTableKind::ALL
            .into_iter()
            .map(|kind| Arc::new(WindowUDF::new_from_impl(Finalizer::new(kind))))
            .collect()
    });
    let index = WholeTableKind::ALL
        .iter()
        .position(|k| *k == kind)
        .unwrap_or_default();
    Arc::clone(&INSTANCES[index])
}

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    crate::functions::common::doc(
        "Internal: finalizes a whole-table anonymity function from the states of all classes \
         (inserted by the anonymity rewrite rule; not meant to be called directly).",
        "__anon_<function>_final(state) OVER ()",
    )
    .build()
});

#[derive(Debug, PartialEq, Eq, Hash)]
struct Finalizer {
    kind: WholeTableKind,
    signature: Signature,
}

impl Finalizer {
    fn new(kind: WholeTableKind) -> Self {
        Self {
            kind,
            signature: Signature::any(1, Volatility::Immutable),
        }
    }
}

impl WindowUDFImpl for Finalizer {
    fn name(&self) -> &str {
        self.kind.finalizer_name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn partition_evaluator(
        &self,
        _args: PartitionEvaluatorArgs,
    ) -> Result<Box<dyn PartitionEvaluator>> {
        Ok(Box::new(FinalizerEvaluator { kind: self.kind }))
    }

    fn field(&self, field_args: WindowUDFFieldArgs) -> Result<FieldRef> {
        Ok(Arc::new(Field::new(
            field_args.name(),
            DataType::Float64,
            true,
        )))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCUMENTATION)
    }
}

#[derive(Debug)]
struct FinalizerEvaluator {
    kind: WholeTableKind,
}

impl PartitionEvaluator for FinalizerEvaluator {
    fn evaluate_all(&mut self, values: &[ArrayRef], _num_rows: usize) -> Result<ArrayRef> {
        finalize(self.kind, &values[0])
    }
}

/// The functions [`histogram_finalizer_udwf`] can finalize, in the order of its struct's
/// fields; a function's bit in the mask is `1 << position`.
pub const HISTOGRAM_FINALIZED: [WholeTableKind; 5] = [
    WholeTableKind::TCloseness,
    WholeTableKind::TClosenessOrdered,
    WholeTableKind::BetaLikeness,
    WholeTableKind::EnhancedBetaLikeness,
    WholeTableKind::DeltaDisclosure,
];

/// The struct [`histogram_finalizer_udwf`] returns: a nullable Float64 per function.
fn histogram_final_fields() -> Fields {
    HISTOGRAM_FINALIZED
        .iter()
        .map(|kind| Field::new(kind.function_name(), DataType::Float64, true))
        .collect()
}

/// The finalizer of several functions of one histogram (see module docs).
pub fn histogram_finalizer_udwf() -> Arc<WindowUDF> {
    static INSTANCE: LazyLock<Arc<WindowUDF>> = LazyLock::new(|| {
        Arc::new(WindowUDF::new_from_impl(HistogramFinalizer {
            signature: Signature::any(2, Volatility::Immutable),
        }))
    });
    Arc::clone(&INSTANCE)
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct HistogramFinalizer {
    signature: Signature,
}

impl WindowUDFImpl for HistogramFinalizer {
    fn name(&self) -> &str {
        "__anon_histogram_final"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn partition_evaluator(
        &self,
        _args: PartitionEvaluatorArgs,
    ) -> Result<Box<dyn PartitionEvaluator>> {
        Ok(Box::new(HistogramFinalizerEvaluator))
    }

    fn field(&self, field_args: WindowUDFFieldArgs) -> Result<FieldRef> {
        Ok(Arc::new(Field::new(
            field_args.name(),
            DataType::Struct(histogram_final_fields()),
            false,
        )))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCUMENTATION)
    }
}

#[derive(Debug)]
struct HistogramFinalizerEvaluator;

impl PartitionEvaluator for HistogramFinalizerEvaluator {
    fn evaluate_all(&mut self, values: &[ArrayRef], num_rows: usize) -> Result<ArrayRef> {
        let fields = histogram_final_fields();
        if num_rows == 0 {
            return Ok(Arc::new(StructArray::new_null(fields, 0)));
        }
        let mask = values
            .get(1)
            .and_then(|m| m.as_primitive_opt::<Int64Type>())
            .filter(|m| m.is_valid(0))
            .map(|m| m.value(0))
            .ok_or_else(|| {
                DataFusionError::Internal(
                    "__anon_histogram_final: the functions mask must be an Int64 constant".into(),
                )
            })?;
        let table = TableHistograms::try_new(&values[0])?;
        let columns = HISTOGRAM_FINALIZED
            .iter()
            .enumerate()
            .map(|(bit, kind)| {
                if mask & (1 << bit) != 0 {
                    finalize_histograms(*kind, &table)
                } else {
                    Ok(new_null_array(&DataType::Float64, num_rows))
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Arc::new(StructArray::try_new(fields, columns, None)?))
    }
}
