//! The SQL crate's tests, written from `docs/functions.md` and `docs/definitions.md`: the
//! sqllogictest files under `tests/slt/` and the brute-force reference compared with SQL. They
//! stand on DataFusion alone (the repository's structure test checks that testing this crate
//! compiles no engine, Delta, cluster, cloud or command-line crate).

#[path = "../support/reference.rs"]
mod reference;
#[path = "../support/slt_runner.rs"]
mod slt_runner;

mod against_reference;
mod slt;
