//! The engine's jobs and searches end to end, called as the shells call them (`jobs::*` with
//! typed options; no `anon` process): each release is checked again here, independently of
//! the job's own verification, by recounting the written file with plain SQL, from the
//! hierarchy files, or against a brute-force reference. The command line's own surface
//! (arguments, exit codes, what it prints) is tested at the root (`tests/integration`).

mod agreement;
mod anonymize;
mod population;
#[path = "../../../datafusion-anonymity/tests/support/reference.rs"]
mod reference;
mod search;
mod sets;
mod support;
mod synthetic;
mod tuple_diversity;
