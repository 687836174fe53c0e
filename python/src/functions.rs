//! The crate's functions as datafusion-python sees them through the FFI.
//!
//! Three things of the crate do not cross the FFI boundary, and each is made safe here:
//! - **The whole-table rewrite** (an analyzer rule): `t_closeness`, `t_closeness_ordered`,
//!   `ncp`, `entropy_leakage`, β-likeness, δ-disclosure and `tuple_diversity` need statistics
//!   of the whole table, which only that rewrite computes.
//! - **Simplification** (`AggregateUDFImpl::simplify`): `k_anonymity()` and
//!   `reidentification_risk()` without an argument are rewritten to row counts by it (an
//!   aggregate with no argument sees no values, so it cannot count rows itself).
//!
//!   Both are done by the query planner `register()` installs on the session
//!   ([`crate::planner`]). In a session without it these calls refuse, when the query is
//!   physically planned, naming the line that installs it; every other call runs as in Rust.
//! - **Constant arguments**: a scalar function called through the FFI receives its constant
//!   arguments (`mask(zip, 2)`'s level) expanded to arrays, and an aggregate its argument
//!   expressions as opaque foreign expressions (`recursive_cl_diversity(s, 2)`'s `c` is no
//!   longer a literal). [`ConstantArguments`] and [`Guarded`] turn them back into the constants
//!   the planner gave.
//!
//! The internal functions the rewrite inserts (`__anon_*`) are registered on the session
//! too: the plan crosses the FFI serialized, and its functions are found there by name.

use std::sync::Arc;

use datafusion_anonymity::datafusion::arrow::array::{RecordBatch, new_empty_array};
use datafusion_anonymity::datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion_anonymity::datafusion::common::ScalarValue;
use datafusion_anonymity::datafusion::error::{DataFusionError, Result};
use datafusion_anonymity::datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion_anonymity::datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, Documentation, GroupsAccumulator,
    ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};
use datafusion_anonymity::datafusion::physical_expr::PhysicalExpr;
use datafusion_anonymity::datafusion::physical_expr::expressions::Literal;
use datafusion_anonymity::functions::whole_table::WholeTableFunction;
use datafusion_anonymity::generalize::HierarchyRegistry;
use datafusion_anonymity::generalize::udf::{
    GeneralizeFunction, bucket_udf, generalize_date_udf, mask_udf,
};

/// The user-facing functions that take no argument only through `simplify` (see module docs),
/// with what to write instead.
const NULLARY: [(&str, &str); 2] = [
    ("k_anonymity", "count(*)"),
    ("reidentification_risk", "1.0 / count(*)"),
];

/// The line that installs the query planner, named by every refusal.
pub const INSTALL: &str = "datafusion_anonymity.register(ctx)";

/// Why a function refuses some calls in a session without the query planner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Refusal {
    /// Every call: it needs the whole-table rewrite.
    WholeTable,
    /// Calls without arguments; the plain-SQL equivalent.
    Nullary(&'static str),
}

/// An aggregate function of the crate as datafusion-python calls it: it refuses, when
/// physically planned, the calls that need the query planner (which replaces them before
/// that, so only a session without it gets there), and gives its accumulators constant
/// arguments back as literals; every other call goes to the function itself.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Guarded {
    inner: Arc<AggregateUDF>,
    refusal: Option<Refusal>,
}

impl Guarded {
    /// The function itself.
    pub fn function(&self) -> Arc<AggregateUDF> {
        Arc::clone(&self.inner)
    }

    fn refuses(&self, arguments: usize) -> bool {
        match self.refusal {
            None => false,
            Some(Refusal::WholeTable) => true,
            Some(Refusal::Nullary(_)) => arguments == 0,
        }
    }

    fn error(&self) -> DataFusionError {
        let name = self.inner.name();
        DataFusionError::Plan(match self.refusal {
            None => format!("internal error: {name} refused a call it accepts"),
            Some(refusal) => match refusal {
                Refusal::WholeTable => format!(
                    "{name} needs statistics of the whole table, which datafusion-anonymity's \
                     query planner computes by rewriting the query, and this session does not \
                     have that planner: install it with {INSTALL} (it registers the functions \
                     too; a later ctx.set_query_planner(...) replaces it)"
                ),
                Refusal::Nullary(instead) => format!(
                    "{name}() without an argument is rewritten to a row count by \
                     datafusion-anonymity's query planner, and this session does not have that \
                     planner: install it with {INSTALL} (or write {instead}, the same value)"
                ),
            },
        })
    }
}

/// `args` with every argument after the first that is a constant (evaluates to a scalar on
/// no rows) as a literal, passed to `f`. A column or any expression of the rows evaluates to
/// an array and stays as it is, so the function still refuses it as it does in Rust.
fn with_constants<R>(
    args: AccumulatorArgs,
    f: impl FnOnce(AccumulatorArgs) -> Result<R>,
) -> Result<R> {
    let mut exprs: Vec<Arc<dyn PhysicalExpr>> = args.exprs.to_vec();
    let empty = RecordBatch::new_empty(Arc::new(args.schema.clone()));
    for expr in exprs.iter_mut().skip(1) {
        if expr.downcast_ref::<Literal>().is_some() {
            continue;
        }
        if let Ok(ColumnarValue::Scalar(value)) = expr.evaluate(&empty) {
            *expr = Arc::new(Literal::new(value));
        }
    }
    f(AccumulatorArgs {
        exprs: &exprs,
        ..args
    })
}

impl AggregateUDFImpl for Guarded {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.inner().coerce_types(arg_types)
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        // not refused here: the query planner replaces the call after this (logical) planning
        self.inner.return_type(arg_types)
    }

    fn is_nullable(&self) -> bool {
        self.inner.is_nullable()
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        if self.refuses(args.exprs.len()) {
            return Err(self.error());
        }
        with_constants(args, |args| self.inner.inner().accumulator(args))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        if self.refuses(args.input_fields.len()) {
            return Err(self.error());
        }
        self.inner.inner().state_fields(args)
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        // a refused call goes to `accumulator`, which refuses it
        !self.refuses(args.exprs.len()) && self.inner.inner().groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        if self.refuses(args.exprs.len()) {
            return Err(self.error());
        }
        with_constants(args, |args| {
            self.inner.inner().create_groups_accumulator(args)
        })
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }
}

/// The aggregate functions, the rewrite's internal ones included, as datafusion-python may call
/// them (see module docs).
pub fn aggregate_functions() -> Vec<Arc<AggregateUDF>> {
    datafusion_anonymity::functions::all_aggregate_functions()
        .into_iter()
        .map(|udaf| {
            let refusal = if udaf.inner().is::<WholeTableFunction>() {
                Some(Refusal::WholeTable)
            } else {
                NULLARY
                    .iter()
                    .find(|(name, _)| *name == udaf.name())
                    .map(|(_, instead)| Refusal::Nullary(instead))
            };
            Arc::new(AggregateUDF::new_from_impl(Guarded {
                inner: udaf,
                refusal,
            }))
        })
        .collect()
}

/// A recoding function whose arguments after the first are constants (levels, widths, units,
/// hierarchy names), called through the FFI: see module docs.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ConstantArguments {
    inner: Arc<ScalarUDF>,
}

impl ScalarUDFImpl for ConstantArguments {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.inner().coerce_types(arg_types)
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.inner().return_type(arg_types)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        // planning: the constants are checked here, as in Rust
        self.inner.return_field_from_args(args)
    }

    fn invoke_with_args(&self, mut args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if args.number_rows == 0 {
            return Ok(ColumnarValue::Array(new_empty_array(
                args.return_field.data_type(),
            )));
        }
        for arg in args.args.iter_mut().skip(1) {
            if let ColumnarValue::Array(values) = arg {
                // the planner accepted only a constant here (return_field_from_args), so
                // every row holds the same value
                *arg = ColumnarValue::Scalar(ScalarValue::try_from_array(values, 0)?);
            }
        }
        self.inner.invoke_with_args(args)
    }

    fn documentation(&self) -> Option<&Documentation> {
        self.inner.documentation()
    }
}

/// The recoding functions (`mask`, `bucket`, `generalize_date`, and `generalize` looking up
/// `registry`) and the rewrite's internal scalar functions, as datafusion-python may call them.
pub fn scalar_functions(registry: Arc<HierarchyRegistry>) -> Vec<Arc<ScalarUDF>> {
    [
        mask_udf(),
        bucket_udf(),
        generalize_date_udf(),
        Arc::new(ScalarUDF::new_from_impl(GeneralizeFunction::new(registry))),
    ]
    .into_iter()
    .chain(datafusion_anonymity::rewrite::all_scalar_functions())
    .map(|inner| Arc::new(ScalarUDF::new_from_impl(ConstantArguments { inner })))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every user function that accepts no argument is either a whole-table function or
    /// listed in [`NULLARY`]: a new one must be guarded too.
    #[test]
    fn nullary_functions_are_guarded() {
        for udaf in datafusion_anonymity::functions::user_functions() {
            if udaf.inner().coerce_types(&[]).is_ok() {
                assert!(
                    udaf.inner().is::<WholeTableFunction>()
                        || NULLARY.iter().any(|(name, _)| *name == udaf.name()),
                    "{} accepts no argument but is not guarded",
                    udaf.name()
                );
            }
        }
    }

    /// Logical planning accepts every call (the query planner replaces some afterwards);
    /// physical planning of a call the planner would have replaced refuses, naming the line
    /// that installs it.
    #[test]
    fn refusals_happen_at_physical_planning() {
        use datafusion_anonymity::datafusion::arrow::datatypes::Field;

        let functions = aggregate_functions();
        let find = |name: &str| {
            functions
                .iter()
                .find(|f| f.name() == name)
                .cloned()
                .unwrap()
        };
        let state = |udaf: &Arc<AggregateUDF>, input: Vec<FieldRef>| {
            udaf.state_fields(StateFieldsArgs {
                name: udaf.name(),
                input_fields: &input,
                return_field: Arc::new(Field::new("r", DataType::Float64, true)),
                ordering_fields: &[],
                is_distinct: false,
            })
        };
        let utf8: FieldRef = Arc::new(Field::new("d", DataType::Utf8, true));
        let t = find("t_closeness");
        assert_eq!(t.return_type(&[DataType::Utf8]).unwrap(), DataType::Float64);
        let message = state(&t, vec![Arc::clone(&utf8)]).unwrap_err().to_string();
        assert!(message.contains("install it with datafusion_anonymity.register(ctx)"));
        let k = find("k_anonymity");
        assert_eq!(k.return_type(&[]).unwrap(), DataType::Int64);
        let message = state(&k, vec![]).unwrap_err().to_string();
        assert!(message.contains("install it with datafusion_anonymity.register(ctx)"));
        assert!(message.contains("or write count(*)"));
        // with an argument, k_anonymity runs as it is; so do the internal functions
        assert!(state(&k, vec![Arc::clone(&utf8)]).is_ok());
        assert!(state(&find("__anon_sa_histogram"), vec![utf8]).is_ok());
        assert_eq!(
            find("l_diversity").return_type(&[DataType::Utf8]).unwrap(),
            DataType::Int64
        );
    }
}
