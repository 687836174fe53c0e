//! `[synthetic]`: synthetic records added to the written classes that fall below a threshold
//! (seed 000's post-analytics action), capped by a share of the published rows.
//!
//! ```toml
//! [synthetic]
//! k = 10              # a written class of fewer rows gets records until it has k
//! l = 3               # ... or until it holds l distinct values of each sensitive attribute
//! max_share = 0.01    # at most this share of the published rows is synthetic (default 0.01)
//! ```
//!
//! At least one of `k` and `l` is given. It applies to `method = "generalization"` with
//! `suppression = "drop"`; a person column is refused (a synthetic record would need a
//! person), and so is `[population]` (the records would change what k-map and δ-presence
//! measure). The algorithm and the report: [`crate::publish::synthetic`].

use serde::Deserialize;

use super::bucketization::Method;

/// `[synthetic]` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SyntheticKeys {
    /// The class size to reach.
    pub k: Option<u64>,
    /// The distinct values of each sensitive attribute to reach.
    pub l: Option<u64>,
    /// The largest share of synthetic rows among the published rows.
    pub max_share: Option<f64>,
}

/// The default cap on the synthetic share of the published rows.
pub const DEFAULT_MAX_SHARE: f64 = 0.01;

/// `[synthetic]`, checked.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Synthetic {
    /// A class of fewer rows gets records up to this many (0: no size threshold).
    pub k: u64,
    /// A class with fewer distinct values of a sensitive attribute gets records carrying
    /// values it lacks, up to this many (0: no diversity threshold).
    pub l: u64,
    /// Synthetic rows are at most this share of the published rows (real + synthetic).
    pub max_share: f64,
}

impl Synthetic {
    /// The most synthetic rows `real` published rows may receive: m ≤ s·(n + m), so
    /// m ≤ ⌊s·n / (1 − s)⌋.
    pub fn cap(&self, real: u64) -> u64 {
        if self.max_share >= 1.0 {
            return u64::MAX;
        }
        // the small tolerance keeps an exact share (0.5 of 2 rows) from rounding down
        ((self.max_share * real as f64 / (1.0 - self.max_share)) * (1.0 + 1e-12)).floor() as u64
    }
}

/// Checks `[synthetic]` against the rest of the policy.
pub fn check(
    keys: Option<&SyntheticKeys>,
    method: Method,
    mask: bool,
    person: bool,
    population: bool,
    sensitive: usize,
) -> Result<Option<Synthetic>, String> {
    let Some(keys) = keys else {
        return Ok(None);
    };
    if method != Method::Generalization {
        return Err(format!(
            "[synthetic] applies to method = \"generalization\", not to {}",
            method.name()
        ));
    }
    if mask {
        return Err(
            "[synthetic] needs privacy.suppression = \"drop\": a masked release publishes its \
             suppressed rows as one class of `*`, which synthetic records would not protect"
                .into(),
        );
    }
    if person {
        return Err(
            "[synthetic] cannot be used with a person column: a synthetic record would need a \
             person, and any id given to it would mark it"
                .into(),
        );
    }
    if population {
        return Err(
            "[synthetic] cannot be used with [population]: synthetic records would change the \
             classes' sizes that k-map and δ-presence compare with the population"
                .into(),
        );
    }
    let k = keys.k.unwrap_or(0);
    let l = keys.l.unwrap_or(0);
    if keys.k.is_some_and(|k| k < 2) {
        return Err(format!("synthetic.k must be at least 2, got {k}"));
    }
    if keys.l.is_some_and(|l| l < 2) {
        return Err(format!("synthetic.l must be at least 2, got {l}"));
    }
    if k == 0 && l == 0 {
        return Err("[synthetic] needs a threshold: k, l or both".into());
    }
    if l > 0 && sensitive == 0 {
        return Err("synthetic.l needs a sensitive attribute (role = \"sensitive\")".into());
    }
    let max_share = keys.max_share.unwrap_or(DEFAULT_MAX_SHARE);
    if !(max_share > 0.0 && max_share < 1.0) {
        return Err(format!(
            "synthetic.max_share is a share of the published rows in (0, 1), got {max_share}"
        ));
    }
    Ok(Some(Synthetic { k, l, max_share }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_keeps_the_share_of_all_published_rows() {
        // s = 0.01, n = 990: m ≤ 0.01·990/0.99 = 10, and 10/(990 + 10) = 0.01 exactly
        let s = Synthetic {
            k: 5,
            l: 0,
            max_share: 0.01,
        };
        assert_eq!(s.cap(990), 10);
        // n = 989: 9.989… → 9
        assert_eq!(s.cap(989), 9);
        // s = 0.5, n = 2: m ≤ 2
        let half = Synthetic {
            max_share: 0.5,
            ..s
        };
        assert_eq!(half.cap(2), 2);
    }

    #[test]
    fn bad_settings_are_refused_with_their_key() {
        let keys = |k, l, share| SyntheticKeys {
            k,
            l,
            max_share: share,
        };
        let generalize = Method::Generalization;
        let message = |keys: SyntheticKeys, method, mask, person, sensitive| {
            check(Some(&keys), method, mask, person, false, sensitive).unwrap_err()
        };
        assert!(
            message(keys(Some(1), None, None), generalize, false, false, 0).contains("synthetic.k")
        );
        assert!(
            message(keys(None, Some(1), None), generalize, false, false, 1).contains("synthetic.l")
        );
        assert!(
            message(keys(None, None, None), generalize, false, false, 0)
                .contains("needs a threshold")
        );
        assert!(
            message(keys(None, Some(2), None), generalize, false, false, 0)
                .contains("sensitive attribute")
        );
        assert!(
            message(keys(Some(5), None, Some(0.0)), generalize, false, false, 0)
                .contains("max_share")
        );
        assert!(
            message(keys(Some(5), None, Some(1.0)), generalize, false, false, 0)
                .contains("max_share")
        );
        assert!(message(keys(Some(5), None, None), generalize, true, false, 0).contains("drop"));
        assert!(message(keys(Some(5), None, None), generalize, false, true, 0).contains("person"));
        assert!(
            message(
                keys(Some(5), None, None),
                Method::Perturbation,
                false,
                false,
                0
            )
            .contains("not to perturbation")
        );
        assert!(
            check(
                Some(&keys(Some(5), None, None)),
                generalize,
                false,
                false,
                true,
                0
            )
            .unwrap_err()
            .contains("[population]")
        );
        let ok = check(
            Some(&keys(Some(5), None, None)),
            generalize,
            false,
            false,
            false,
            0,
        )
        .unwrap();
        assert_eq!(
            ok,
            Some(Synthetic {
                k: 5,
                l: 0,
                max_share: DEFAULT_MAX_SHARE
            })
        );
    }
}
