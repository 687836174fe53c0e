//! PyCapsules, the way datafusion-python and Arrow hand FFI structs across: made from a value
//! under a name, and read back checked against the name.

use std::ffi::CString;
use std::ptr::NonNull;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

/// `value` in a capsule called `name`.
pub fn capsule<'py, T: 'static + Send>(
    py: Python<'py>,
    value: T,
    name: &str,
) -> PyResult<Bound<'py, PyCapsule>> {
    let name = CString::new(name).map_err(|e| PyValueError::new_err(e.to_string()))?;
    PyCapsule::new(py, value, Some(name))
}

/// A copy of `capsule`'s FFI struct of type `T`, checked against the capsule `name`.
pub fn from_capsule<T: Clone>(capsule: &Bound<'_, PyAny>, name: &std::ffi::CStr) -> PyResult<T> {
    let capsule = capsule.cast::<PyCapsule>()?;
    let pointer: NonNull<T> = capsule.pointer_checked(Some(name))?.cast();
    // SAFETY: a capsule under this name holds a `T` (datafusion-python's protocol) and stays
    // alive while it is cloned here
    Ok(unsafe { pointer.as_ref() }.clone())
}
