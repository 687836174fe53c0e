//! The window functions `__anon_*_final(state) OVER ()` that finalize whole-table aggregates:
//! they see every class's state at once (one row per class) and return each class's value.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::error::Result;
use datafusion::logical_expr::function::{PartitionEvaluatorArgs, WindowUDFFieldArgs};
use datafusion::logical_expr::{
    Documentation, PartitionEvaluator, Signature, Volatility, WindowUDF, WindowUDFImpl,
};

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
        self.kind.finalize(&values[0])
    }
}
