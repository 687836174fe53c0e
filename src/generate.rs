//! Synthetic patients table (`anon generate`): placeholder.

/// Placeholder until the generator lands.
pub fn write_patients(
    _out: &std::path::Path,
    _rows: usize,
    _seed: u64,
) -> datafusion::error::Result<()> {
    Err(datafusion::error::DataFusionError::NotImplemented(
        "generator".into(),
    ))
}
