//! Session options of this crate, under the `anonymity.` prefix of DataFusion's configuration:
//! `SET anonymity.single_phase_aggregation = false` in SQL, or
//! [`AnonymityOptions`] through `SessionConfig::with_option_extension` before [`crate::register`].

use datafusion::common::config::ConfigExtension;
use datafusion::common::extensions_options;

extensions_options! {
    /// Options of the anonymity functions (DataFusion config namespace `anonymity`).
    pub struct AnonymityOptions {
        /// Group rows into classes in one phase (hash-repartition the rows by the GROUP BY keys,
        /// then aggregate each partition once) when an aggregate keeps a per-row log — persons,
        /// sensitive values — whose partial states would be as large as the rows. Faster with
        /// many small classes (the usual GROUP BY of quasi-identifiers); with a handful of large
        /// classes on many cores, turning it off keeps every core busy. See
        /// `rewrite::SinglePhaseAggregation`.
        pub single_phase_aggregation: bool, default = true
        /// Find each row's class by its GROUP BY values coded and packed into one word (a flat
        /// array or a one-word hash table), instead of DataFusion's group table, when every key
        /// is an integer, date, time, text or dictionary column; falls back to DataFusion's
        /// aggregation when the memory pool has a limit (single-phase aggregations) or refuses.
        /// See `rewrite::PackedAggregation`.
        pub packed_aggregation: bool, default = true
    }
}

impl ConfigExtension for AnonymityOptions {
    const PREFIX: &'static str = "anonymity";
}
