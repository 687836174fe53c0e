//! `generalize(col, 'hierarchy', level)`: recodes with a hierarchy registered on the session.

use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock};

use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature,
    Volatility,
};

use super::{
    LABEL_TYPE, check_arity, check_constant_type, doc, executed, label_field, level_arg, planned,
    recode_first, string_arg,
};
use crate::generalize::Hierarchy;
use crate::generalize::common::is_string;
use crate::generalize::registry::HierarchyRegistry;

const SYNTAX: &str = "generalize(col, 'hierarchy', level)";

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    doc(
        "Recodes each value with the hierarchy registered on the session under the given \
         name (from Rust with `register_hierarchy`, or by a policy): level 0 is the value \
         itself as text, the top level (height − 1) is `*`. Mask, interval, date and value-tree \
         (ARX CSV) hierarchies; see each kind for its labels. Planning fails for an unknown \
         hierarchy, a level above its top, or a column type the hierarchy does not fit; a value \
         missing from a tree hierarchy fails the query with the number of such distinct values \
         (never the values). Returns Utf8View; NULL stays NULL.",
        SYNTAX,
    )
    .with_argument(
        "col",
        "The column to recode; its type must fit the hierarchy's kind.",
    )
    .with_argument(
        "hierarchy",
        "Constant string: the registered hierarchy's name.",
    )
    .with_argument(
        "level",
        "Constant integer from 0 to the hierarchy's height − 1.",
    )
    .with_sql_example(
        "```sql\n> SELECT generalize(education, 'education', 1) AS education, count(*) \
         FROM adult GROUP BY 1;\n```",
    )
    .build()
});

/// The `generalize` function of one session: it holds that session's hierarchy registry.
#[derive(Debug)]
pub struct GeneralizeFunction {
    signature: Signature,
    registry: Arc<HierarchyRegistry>,
}

impl GeneralizeFunction {
    /// A `generalize` function reading hierarchies from `registry`.
    pub fn new(registry: Arc<HierarchyRegistry>) -> Self {
        Self {
            signature: Signature::user_defined(Volatility::Immutable),
            registry,
        }
    }

    /// Its registry.
    pub fn registry(&self) -> &Arc<HierarchyRegistry> {
        &self.registry
    }

    /// The hierarchy and level named by the constant arguments, checked against the column.
    fn resolve(
        &self,
        column: &str,
        data_type: &DataType,
        name: Option<&datafusion::common::ScalarValue>,
        level: Option<&datafusion::common::ScalarValue>,
    ) -> Result<(Arc<Hierarchy>, usize)> {
        let name = string_arg("generalize", "hierarchy", name)?;
        let level = level_arg("generalize", "level", level)?;
        let hierarchy = self.registry.lookup(&name)?;
        hierarchy.check_level(level)?;
        hierarchy.check_column(column, data_type)?;
        Ok((hierarchy, level))
    }
}

// one function per registry: equal when they share it
impl PartialEq for GeneralizeFunction {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.registry, &other.registry)
    }
}

impl Eq for GeneralizeFunction {}

impl Hash for GeneralizeFunction {
    fn hash<H: Hasher>(&self, state: &mut H) {
        Arc::as_ptr(&self.registry).hash(state);
    }
}

impl ScalarUDFImpl for GeneralizeFunction {
    fn name(&self) -> &str {
        "generalize"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        check_arity("generalize", SYNTAX, arg_types, 3)?;
        check_constant_type(
            "generalize",
            "hierarchy",
            &arg_types[1],
            is_string,
            "a constant string",
        )?;
        check_constant_type(
            "generalize",
            "level",
            &arg_types[2],
            DataType::is_integer,
            "a constant integer",
        )?;
        Ok(arg_types.to_vec())
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(LABEL_TYPE)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let column = &args.arg_fields[0];
        self.resolve(
            column.name(),
            column.data_type(),
            planned(args.scalar_arguments, 1),
            planned(args.scalar_arguments, 2),
        )?;
        Ok(label_field(self.name(), args.arg_fields))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let column = Arc::clone(&args.arg_fields[0]);
        let (hierarchy, level) = self.resolve(
            column.name(),
            column.data_type(),
            executed(&args, 1),
            executed(&args, 2),
        )?;
        recode_first(&args, |values| {
            hierarchy.generalize_column(column.name(), values, level)
        })
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCUMENTATION)
    }
}
