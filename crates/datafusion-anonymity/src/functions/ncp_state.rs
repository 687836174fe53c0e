//! Internal `__anon_ncp_state(a1, ..., ad)`: what `ncp` needs to know of a class — for each
//! ordered attribute its range (min, max), for each other attribute its distinct values — plus
//! the class's row count. See [`super::whole_table`].

use std::sync::{Arc, LazyLock};

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float64Array, StructArray, UInt64Array,
};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields, Float64Type, UInt64Type};
use datafusion::error::Result;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Documentation, EmitTo, GroupsAccumulator,
    Signature, Volatility,
};

use super::common::{SingleClass, doc, is_ordered, selected};
use super::histogram::{ClassHistograms, HistogramOutput, histogram_state_fields};

static DOCUMENTATION: LazyLock<Documentation> = LazyLock::new(|| {
    doc(
        "Internal: per attribute, the class's range (ordered types) or distinct values \
         (others), and the class's rows; produced by the rewrite of ncp.",
        "__anon_ncp_state(attribute, ...)",
    )
    .build()
});

/// The internal NCP state aggregate.
pub fn ncp_state_udaf() -> Arc<AggregateUDF> {
    static INSTANCE: LazyLock<Arc<AggregateUDF>> =
        LazyLock::new(|| Arc::new(AggregateUDF::new_from_impl(NcpState::default())));
    Arc::clone(&INSTANCE)
}

/// Fields of the state, named `a{i}_min`/`a{i}_max` or `a{i}_values`/`a{i}_counts`, then
/// `rows`; with `base` they become DataFusion state names.
pub fn ncp_fields(base: &str, input_types: &[DataType]) -> Vec<FieldRef> {
    let name = |part: String| {
        if base.is_empty() {
            part
        } else {
            format_state_name(base, &part)
        }
    };
    let mut fields = Vec::new();
    for (i, data_type) in input_types.iter().enumerate() {
        if is_ordered(data_type) {
            for part in ["min", "max"] {
                fields.push(Arc::new(Field::new(
                    name(format!("a{i}_{part}")),
                    DataType::Float64,
                    true,
                )));
            }
        } else {
            fields.extend(
                histogram_state_fields(&format!("a{i}"), data_type)
                    .into_iter()
                    .map(|f| Arc::new(f.as_ref().clone().with_name(name(f.name().clone())))),
            );
        }
    }
    fields.push(Arc::new(Field::new(
        name("rows".into()),
        DataType::UInt64,
        true,
    )));
    fields
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct NcpState {
    signature: Signature,
}

impl Default for NcpState {
    fn default() -> Self {
        Self {
            signature: Signature::variadic_any(Volatility::Immutable),
        }
    }
}

fn input_types(args: &AccumulatorArgs) -> Vec<DataType> {
    args.expr_fields
        .iter()
        .map(|f| f.data_type().clone())
        .collect()
}

impl AggregateUDFImpl for NcpState {
    fn name(&self) -> &str {
        "__anon_ncp_state"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Struct(Fields::from(ncp_fields("", arg_types))))
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let types = input_types(&args);
        Ok(Box::new(SingleClass::try_new(
            NcpAccumulator::try_new(&types)?,
            &types,
        )?))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let types: Vec<DataType> = args
            .input_fields
            .iter()
            .map(|f| f.data_type().clone())
            .collect();
        Ok(ncp_fields(args.name, &types))
    }

    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(NcpAccumulator::try_new(&input_types(&args))?))
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(&DOCUMENTATION)
    }
}

/// Converts an ordered array to f64 (dates and times through their integer representation).
pub fn to_f64(array: &ArrayRef) -> Result<Float64Array> {
    let integer = match array.data_type() {
        DataType::Date32 | DataType::Time32(_) => Some(DataType::Int32),
        DataType::Date64
        | DataType::Timestamp(_, _)
        | DataType::Time64(_)
        | DataType::Duration(_) => Some(DataType::Int64),
        _ => None,
    };
    let array = match integer {
        Some(t) => cast(array, &t)?,
        None => Arc::clone(array),
    };
    Ok(cast(&array, &DataType::Float64)?
        .as_primitive::<Float64Type>()
        .clone())
}

/// One attribute's per-class state.
#[derive(Debug)]
enum AttributeState {
    /// min/max per class; an empty class has min = +inf > max = -inf
    Range {
        min: Vec<f64>,
        max: Vec<f64>,
    },
    Values(ClassHistograms),
}

#[derive(Debug)]
struct NcpAccumulator {
    attributes: Vec<AttributeState>,
    rows: Vec<u64>,
    /// the struct returned by `evaluate` (the internal aggregate's return type)
    output_fields: Fields,
}

impl NcpAccumulator {
    fn try_new(types: &[DataType]) -> Result<Self> {
        let attributes = types
            .iter()
            .map(|t| {
                Ok(if is_ordered(t) {
                    AttributeState::Range {
                        min: Vec::new(),
                        max: Vec::new(),
                    }
                } else {
                    AttributeState::Values(ClassHistograms::try_new(t, HistogramOutput::Histogram)?)
                })
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            attributes,
            rows: Vec::new(),
            output_fields: Fields::from(ncp_fields("", types)),
        })
    }

    fn resize(&mut self, total_num_groups: usize) {
        if self.rows.len() < total_num_groups {
            self.rows.resize(total_num_groups, 0);
        }
        for attribute in &mut self.attributes {
            if let AttributeState::Range { min, max } = attribute
                && min.len() < total_num_groups
            {
                min.resize(total_num_groups, f64::INFINITY);
                max.resize(total_num_groups, f64::NEG_INFINITY);
            }
        }
    }

    fn emit(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let mut arrays: Vec<ArrayRef> = Vec::new();
        for attribute in &mut self.attributes {
            match attribute {
                AttributeState::Range { min, max } => {
                    arrays.push(Arc::new(Float64Array::from(emit_to.take_needed(min))));
                    arrays.push(Arc::new(Float64Array::from(emit_to.take_needed(max))));
                }
                AttributeState::Values(histograms) => {
                    arrays.extend(histograms.state_arrays(emit_to)?);
                }
            }
        }
        arrays.push(Arc::new(UInt64Array::from(
            emit_to.take_needed(&mut self.rows),
        )));
        Ok(arrays)
    }
}

/// Whether every entry of `array` is NULL.
fn all_null(array: &ArrayRef) -> bool {
    array.logical_null_count() == array.len()
}

/// Folds `values` into per-class ranges, skipping NULL and NaN.
fn update_range(
    min: &mut [f64],
    max: &mut [f64],
    values: &Float64Array,
    group_indices: &[usize],
    opt_filter: Option<&BooleanArray>,
) {
    for (row, &group) in group_indices.iter().enumerate() {
        if values.is_null(row) || !selected(opt_filter, row) {
            continue;
        }
        let v = values.value(row);
        // NaN fails both comparisons and so is ignored
        if v < min[group] {
            min[group] = v;
        }
        if v > max[group] {
            max[group] = v;
        }
    }
}

impl GroupsAccumulator for NcpAccumulator {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        self.resize(total_num_groups);
        for (row, &group) in group_indices.iter().enumerate() {
            self.rows[group] += u64::from(selected(opt_filter, row));
        }
        for (attribute, array) in self.attributes.iter_mut().zip(values) {
            match attribute {
                // NULLs are ignored: nothing to do for an all-NULL batch (such as the constant
                // NULL the rewrite puts in place of a GROUP BY attribute)
                AttributeState::Range { .. } if all_null(array) => {}
                AttributeState::Values(histograms) if all_null(array) => {
                    histograms.ensure_groups(total_num_groups)?
                }
                AttributeState::Range { min, max } => {
                    update_range(min, max, &to_f64(array)?, group_indices, opt_filter)
                }
                AttributeState::Values(histograms) => {
                    histograms.update(array, group_indices, opt_filter, total_num_groups)?
                }
            }
        }
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let arrays = self.emit(emit_to)?;
        Ok(Arc::new(StructArray::try_new(
            self.output_fields.clone(),
            arrays,
            None,
        )?))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        self.emit(emit_to)
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.resize(total_num_groups);
        let mut column = 0;
        for attribute in &mut self.attributes {
            match attribute {
                AttributeState::Range { min, max } => {
                    let mins = values[column].as_primitive::<Float64Type>();
                    let maxs = values[column + 1].as_primitive::<Float64Type>();
                    for (row, &group) in group_indices.iter().enumerate() {
                        min[group] = min[group].min(mins.value(row));
                        max[group] = max[group].max(maxs.value(row));
                    }
                    column += 2;
                }
                AttributeState::Values(histograms) => {
                    if all_null(values[column].as_list::<i32>().values()) {
                        histograms.ensure_groups(total_num_groups)?;
                    } else {
                        histograms.merge(
                            &values[column],
                            &values[column + 1],
                            group_indices,
                            total_num_groups,
                        )?;
                    }
                    column += 2;
                }
            }
        }
        let rows = values[column].as_primitive::<UInt64Type>();
        for (row, &group) in group_indices.iter().enumerate() {
            self.rows[group] += rows.value(row);
        }
        Ok(())
    }

    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        let num_rows = values.first().map_or(0, |v| v.len());
        let mut arrays: Vec<ArrayRef> = Vec::new();
        for (attribute, array) in self.attributes.iter().zip(values) {
            match attribute {
                AttributeState::Range { .. } if all_null(array) => {
                    arrays.push(Arc::new(Float64Array::from_value(f64::INFINITY, num_rows)));
                    arrays.push(Arc::new(Float64Array::from_value(
                        f64::NEG_INFINITY,
                        num_rows,
                    )));
                }
                AttributeState::Range { .. } => {
                    // one-row ranges; NULL, NaN and filtered rows become the empty range
                    let as_f64 = to_f64(array)?;
                    let value = |row: usize| {
                        (as_f64.is_valid(row) && selected(opt_filter, row))
                            .then(|| as_f64.value(row))
                            .filter(|v| !v.is_nan())
                    };
                    let min: Float64Array = (0..num_rows)
                        .map(|r| Some(value(r).unwrap_or(f64::INFINITY)))
                        .collect();
                    let max: Float64Array = (0..num_rows)
                        .map(|r| Some(value(r).unwrap_or(f64::NEG_INFINITY)))
                        .collect();
                    arrays.push(Arc::new(min));
                    arrays.push(Arc::new(max));
                }
                AttributeState::Values(_) => {
                    arrays.extend(ClassHistograms::convert_to_state(array, opt_filter)?);
                }
            }
        }
        let rows: UInt64Array = (0..num_rows)
            .map(|row| Some(u64::from(selected(opt_filter, row))))
            .collect();
        arrays.push(Arc::new(rows));
        Ok(arrays)
    }

    fn size(&self) -> usize {
        self.rows.capacity() * size_of::<u64>()
            + self
                .attributes
                .iter()
                .map(|a| match a {
                    AttributeState::Range { min, max } => {
                        (min.capacity() + max.capacity()) * size_of::<f64>()
                    }
                    AttributeState::Values(h) => h.size(),
                })
                .sum::<usize>()
    }
}
