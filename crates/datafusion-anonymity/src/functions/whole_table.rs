//! [`WholeTableFunction`]: the aggregate UDF shape of the functions whose value depends on the
//! whole table as well as on the class (`t_closeness`, `t_closeness_ordered`, `ncp`,
//! `entropy_leakage`, `beta_likeness`, `enhanced_beta_likeness`, `delta_disclosure`,
//! `tuple_diversity`).
//!
//! Such a function is never executed as written: the analyzer rule of [`crate::rewrite`]
//! replaces each call by an internal aggregate computing the class's *state* (a histogram, a
//! range, a count) and a window function `OVER ()` over the grouped rows that derives the
//! table's statistics from all the states and finalizes each class's value. One scan of the
//! input; the window sees one row per class.

use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::functions_aggregate::count::count_udaf;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Documentation, Expr, Signature, Volatility, lit,
};

use super::common::{decode_dictionary, is_ordered};
use super::{ncp_state, sa_histogram};

/// Which whole-table function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WholeTableKind {
    TCloseness,
    TClosenessOrdered,
    Ncp,
    EntropyLeakage,
    BetaLikeness,
    EnhancedBetaLikeness,
    DeltaDisclosure,
    TupleDiversity,
}

impl WholeTableKind {
    /// The internal aggregate computing a class's state from the call's arguments.
    pub fn class_state(self, args: Vec<Expr>, filter: Option<Box<Expr>>) -> Expr {
        let (udaf, args) = match self {
            Self::Ncp | Self::TupleDiversity => (ncp_state::ncp_state_udaf(), args),
            Self::EntropyLeakage => (count_udaf(), vec![lit(1i64)]),
            _ => (sa_histogram::sa_histogram_udaf(), args),
        };
        Expr::AggregateFunction(AggregateFunction::new_udf(
            udaf,
            args,
            false,
            filter,
            vec![],
            None,
        ))
    }

    /// Whether the class state is the attribute's histogram (`__anon_sa_histogram`), which
    /// calls on the same attribute can share.
    pub fn reads_histogram(self) -> bool {
        !matches!(
            self,
            Self::Ncp | Self::EntropyLeakage | Self::TupleDiversity
        )
    }

    /// The user-facing function's name.
    pub fn function_name(self) -> &'static str {
        match self {
            Self::TCloseness => "t_closeness",
            Self::TClosenessOrdered => "t_closeness_ordered",
            Self::Ncp => "ncp",
            Self::EntropyLeakage => "entropy_leakage",
            Self::BetaLikeness => "beta_likeness",
            Self::EnhancedBetaLikeness => "enhanced_beta_likeness",
            Self::DeltaDisclosure => "delta_disclosure",
            Self::TupleDiversity => "tuple_diversity",
        }
    }

    /// Name of the window function that calls [`super::finalize::finalize`].
    pub fn finalizer_name(self) -> &'static str {
        match self {
            Self::TCloseness => "__anon_t_closeness_final",
            Self::TClosenessOrdered => "__anon_t_closeness_ordered_final",
            Self::Ncp => "__anon_ncp_final",
            Self::EntropyLeakage => "__anon_entropy_leakage_final",
            Self::BetaLikeness => "__anon_beta_likeness_final",
            Self::EnhancedBetaLikeness => "__anon_enhanced_beta_likeness_final",
            Self::DeltaDisclosure => "__anon_delta_disclosure_final",
            Self::TupleDiversity => "__anon_tuple_diversity_final",
        }
    }

    pub const ALL: [WholeTableKind; 8] = [
        Self::TCloseness,
        Self::TClosenessOrdered,
        Self::Ncp,
        Self::EntropyLeakage,
        Self::BetaLikeness,
        Self::EnhancedBetaLikeness,
        Self::DeltaDisclosure,
        Self::TupleDiversity,
    ];
}

/// A user-facing whole-table aggregate function (see module docs).
#[derive(Debug)]
pub struct WholeTableFunction {
    name: &'static str,
    kind: WholeTableKind,
    signature: Signature,
    documentation: &'static LazyLock<Documentation>,
}

impl PartialEq for WholeTableFunction {
    fn eq(&self, other: &Self) -> bool {
        self.kind == other.kind
    }
}

impl Eq for WholeTableFunction {}

impl std::hash::Hash for WholeTableFunction {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.kind.hash(state);
    }
}

impl WholeTableFunction {
    pub fn new(
        name: &'static str,
        kind: WholeTableKind,
        documentation: &'static LazyLock<Documentation>,
    ) -> Self {
        Self {
            name,
            kind,
            signature: Signature::user_defined(Volatility::Immutable),
            documentation,
        }
    }

    pub fn kind(&self) -> WholeTableKind {
        self.kind
    }

    pub fn into_udaf(self) -> Arc<AggregateUDF> {
        Arc::new(AggregateUDF::new_from_impl(self))
    }

    fn not_rewritten(&self) -> DataFusionError {
        DataFusionError::Plan(format!(
            "{} needs the whole table's statistics, which the anonymity rewrite rule provides: \
             register the functions with datafusion_anonymity::register(&ctx) (GROUPING SETS, \
             ROLLUP and CUBE are not supported)",
            self.name
        ))
    }
}

impl AggregateUDFImpl for WholeTableFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let coerced: Vec<DataType> = arg_types.iter().map(decode_dictionary).collect();
        let arity_error = |expected: &str| {
            DataFusionError::Plan(format!(
                "{} takes {expected}, got {} argument(s)",
                self.name,
                arg_types.len()
            ))
        };
        match self.kind {
            WholeTableKind::TCloseness
            | WholeTableKind::BetaLikeness
            | WholeTableKind::EnhancedBetaLikeness
            | WholeTableKind::DeltaDisclosure
                if coerced.len() != 1 =>
            {
                return Err(arity_error("(sensitive)"));
            }
            WholeTableKind::TClosenessOrdered | WholeTableKind::TupleDiversity => {
                if coerced.len() != 1 {
                    return Err(arity_error("(sensitive)"));
                }
                if !is_ordered(&coerced[0]) {
                    let instead = match self.kind {
                        WholeTableKind::TClosenessOrdered => {
                            "; use t_closeness for categorical attributes"
                        }
                        _ => "",
                    };
                    return Err(DataFusionError::Plan(format!(
                        "{} needs an ordered attribute (numeric, decimal, date or time), \
                         got {}{instead}",
                        self.name, arg_types[0]
                    )));
                }
            }
            WholeTableKind::Ncp => {
                if coerced.is_empty() {
                    return Err(arity_error("(attribute, ...)"));
                }
                if let Some((position, nested)) =
                    coerced.iter().enumerate().find(|(_, t)| t.is_nested())
                {
                    return Err(DataFusionError::Plan(format!(
                        "ncp: argument {} has type {nested}; use scalar quasi-identifiers",
                        position + 1
                    )));
                }
            }
            WholeTableKind::EntropyLeakage if !coerced.is_empty() => {
                return Err(arity_error("no arguments"));
            }
            _ => {}
        }
        Ok(coerced)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }

    fn accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Err(self.not_rewritten())
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        // never materialized: the rewrite replaces the call before execution
        Ok(vec![Arc::new(Field::new(
            format!("{}[unused]", args.name),
            DataType::Null,
            true,
        ))])
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(self.documentation)
    }
}
