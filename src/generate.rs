//! Synthetic patients table (`anon generate`): placeholder.
