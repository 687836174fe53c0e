//! [`ClassDistributionFunction`]: the aggregate UDF shape shared by every function whose value
//! is read off the histogram of one attribute inside the class (`k_anonymity(person_id)`,
//! `l_diversity`, `entropy_l_diversity`, `recursive_cl_diversity`, `alpha_anonymity`,
//! `reidentification_risk(person_id)`). Each function's own file supplies its name,
//! documentation and [`HistogramOutput`].

use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::function::{
    AccumulatorArgs, AggregateFunctionSimplification, StateFieldsArgs,
};
use datafusion::logical_expr::{
    Accumulator, AggregateUDFImpl, Documentation, Expr, GroupsAccumulator, Signature, Volatility,
};

use super::common::{SingleClass, constant_f64, decode_dictionary};
use super::distinct::{DistinctGroupsAccumulator, DistinctOutput, distinct_state_fields};
use super::histogram::{HistogramGroupsAccumulator, HistogramOutput, histogram_state_fields};

/// What the function returns, derived from the call's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Persons (`k_anonymity(person_id)`): Int64.
    Persons,
    /// 1 / persons: Float64.
    PersonRisk,
    /// Distinct values: Int64.
    Distinct,
    /// exp(entropy): Float64.
    Entropy,
    /// Recursive (c, l): Int64; the second argument is the constant c.
    Recursive,
    /// α, the largest share of one value: Float64.
    MaxShare,
}

/// Replaces the zero-argument call (given with its FILTER) by an equivalent one-argument
/// aggregate: a zero-argument accumulator cannot tell how many rows a batch has when
/// DataFusion skips partial aggregation.
pub type NullarySimplification = fn(Option<Box<Expr>>) -> Expr;

/// A per-class function of one attribute's distribution (see module docs).
#[derive(Debug)]
pub struct ClassDistributionFunction {
    name: &'static str,
    kind: Kind,
    /// Arity accepted besides the attribute: `recursive_cl_diversity` takes `c`.
    /// `nullary` is the zero-argument form (`k_anonymity()`), which `simplify` replaces.
    allow_nullary: bool,
    signature: Signature,
    nullary_simplification: Option<NullarySimplification>,
    documentation: &'static std::sync::LazyLock<Documentation>,
}

impl ClassDistributionFunction {
    pub fn new(
        name: &'static str,
        kind: Kind,
        nullary_simplification: Option<NullarySimplification>,
        documentation: &'static std::sync::LazyLock<Documentation>,
    ) -> Self {
        Self {
            name,
            kind,
            allow_nullary: nullary_simplification.is_some(),
            signature: Signature::user_defined(Volatility::Immutable),
            nullary_simplification,
            documentation,
        }
    }

    fn output(&self, args: &AccumulatorArgs) -> Result<HistogramOutput> {
        Ok(match self.kind {
            Kind::Persons => HistogramOutput::DistinctPersons,
            Kind::PersonRisk => HistogramOutput::PersonRisk,
            Kind::Distinct => HistogramOutput::DistinctValues,
            Kind::Entropy => HistogramOutput::EntropyL,
            Kind::MaxShare => HistogramOutput::MaxShare,
            Kind::Recursive => {
                let c = constant_f64(self.name, "c", &args.exprs[1])?;
                if !(c.is_finite() && c > 0.0) {
                    return Err(DataFusionError::Plan(format!(
                        "{}: c must be a positive number",
                        self.name
                    )));
                }
                HistogramOutput::RecursiveL { c }
            }
        })
    }

    /// The attribute's type (the first argument); an error for the zero-argument forms, which
    /// `simplify` replaces before execution.
    fn value_type(&self, args: &AccumulatorArgs) -> Result<DataType> {
        let Some(field) = args.expr_fields.first() else {
            return Err(DataFusionError::Plan(format!(
                "{}() without arguments must be simplified by the optimizer before execution \
                 (enable DataFusion's SimplifyExpressions rule)",
                self.name
            )));
        };
        Ok(field.data_type().clone())
    }

    /// Persons and person risk only need each class's distinct values: the dedicated
    /// distinct-value accumulator, not a histogram.
    fn distinct_output(&self) -> Option<DistinctOutput> {
        match self.kind {
            Kind::Persons => Some(DistinctOutput::Persons),
            Kind::PersonRisk => Some(DistinctOutput::PersonRisk),
            _ => None,
        }
    }
}

impl ClassDistributionFunction {
    /// What the function computes.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// What a call with `args` computes, when it can be read off a shared histogram of its
    /// first argument: not for the zero-argument forms, nor for a `c` that is not a valid
    /// constant (the accumulator reports those).
    pub fn shared_output(&self, args: &[Expr]) -> Option<HistogramOutput> {
        if args.is_empty() {
            return None;
        }
        Some(match self.kind {
            Kind::Persons => HistogramOutput::DistinctPersons,
            Kind::PersonRisk => HistogramOutput::PersonRisk,
            Kind::Distinct => HistogramOutput::DistinctValues,
            Kind::Entropy => HistogramOutput::EntropyL,
            Kind::MaxShare => HistogramOutput::MaxShare,
            Kind::Recursive => {
                let mut c = args.get(1)?;
                // type coercion may have wrapped the constant in a cast
                while let Expr::Cast(cast) = c {
                    c = cast.expr.as_ref();
                }
                let Expr::Literal(value, _) = c else {
                    return None;
                };
                let c = match value.cast_to(&DataType::Float64).ok()? {
                    datafusion::common::ScalarValue::Float64(Some(c)) => c,
                    _ => return None,
                };
                if !(c.is_finite() && c > 0.0) {
                    return None;
                }
                HistogramOutput::RecursiveL { c }
            }
        })
    }
}

// identity is the name and kind: the other fields follow from them
impl PartialEq for ClassDistributionFunction {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.kind == other.kind
    }
}

impl Eq for ClassDistributionFunction {}

impl std::hash::Hash for ClassDistributionFunction {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.name.hash(state);
        self.kind.hash(state);
    }
}

impl AggregateUDFImpl for ClassDistributionFunction {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let arity_ok = match self.kind {
            Kind::Recursive => arg_types.len() == 2,
            _ => arg_types.len() == 1 || (self.allow_nullary && arg_types.is_empty()),
        };
        if !arity_ok {
            let expected = match self.kind {
                Kind::Recursive => "(attribute, c)",
                _ if self.allow_nullary => "() or (person_id)",
                _ => "(attribute)",
            };
            return Err(DataFusionError::Plan(format!(
                "{} takes {expected}, got {} argument(s)",
                self.name,
                arg_types.len()
            )));
        }
        let mut coerced: Vec<DataType> = arg_types.iter().map(decode_dictionary).collect();
        if self.kind == Kind::Recursive {
            if !arg_types[1].is_numeric() {
                return Err(DataFusionError::Plan(format!(
                    "{}: c must be a number, got {}",
                    self.name, arg_types[1]
                )));
            }
            coerced[1] = DataType::Float64;
        }
        Ok(coerced)
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(match self.kind {
            Kind::Persons | Kind::Distinct | Kind::Recursive => DataType::Int64,
            Kind::PersonRisk | Kind::Entropy | Kind::MaxShare => DataType::Float64,
        })
    }

    fn is_nullable(&self) -> bool {
        // only a risk or an α over an empty input has no value (their documented NULL)
        matches!(self.kind, Kind::PersonRisk | Kind::MaxShare)
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let types: Vec<DataType> = args
            .expr_fields
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        let value_type = self.value_type(&args)?;
        Ok(match self.distinct_output() {
            Some(output) => Box::new(SingleClass::try_new(
                DistinctGroupsAccumulator::try_new(&value_type, output)?,
                &types,
            )?),
            None => Box::new(SingleClass::try_new(
                HistogramGroupsAccumulator::try_new(&value_type, self.output(&args)?)?,
                &types,
            )?),
        })
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let value_type = args
            .input_fields
            .first()
            .map_or(DataType::Null, |f| f.data_type().clone());
        Ok(match self.distinct_output() {
            Some(_) => distinct_state_fields(args.name, &value_type),
            None => histogram_state_fields(args.name, &value_type),
        })
    }

    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        let value_type = self.value_type(&args)?;
        Ok(match self.distinct_output() {
            Some(output) => Box::new(DistinctGroupsAccumulator::try_new(&value_type, output)?),
            None => Box::new(HistogramGroupsAccumulator::try_new(
                &value_type,
                self.output(&args)?,
            )?),
        })
    }

    fn simplify(&self) -> Option<AggregateFunctionSimplification> {
        let replacement = self.nullary_simplification?;
        Some(Box::new(move |call, _info| {
            if call.params.args.is_empty() {
                Ok(replacement(call.params.filter))
            } else {
                Ok(Expr::AggregateFunction(call))
            }
        }))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(self.documentation)
    }
}
