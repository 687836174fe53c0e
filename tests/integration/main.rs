//! Integration tests for `datafusion_anonymity`, written from `docs/functions.md` and
//! `METRICS.md`: sqllogictest files under `sql/` and a brute-force reference comparison.

mod anonymize;
mod bucketize;
mod profile;
mod publish;
mod reference;
mod search;
mod slt;
