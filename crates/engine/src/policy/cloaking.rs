//! `[privacy] method = "cloaking"`: location events published as (cell, window) labels of at
//! least k distinct subjects ([`crate::cloaking`]).
//!
//! ```toml
//! [privacy]
//! method = "cloaking"
//! k = 5                      # distinct subjects per published (cell, window)
//! person = "device_id"       # the subject: an identifier, dropped (or `pseudonym = true`)
//! latitude = "lat"           # WGS84 degrees
//! longitude = "lon"
//! time = "ts"                # a timestamp column
//! max_cell_side = 2000       # metres: the largest acceptable cell
//! window = "15m"             # the base window (s, m, h or d)
//! max_window = "2h"          # the longest window: window doubled (default: window)
//! max_level = 24             # the finest quadtree level (default 24, about 2 m)
//! cells = "quadtree"         # or "adaptive"
//! max_suppression = 0.05     # share of events that may be suppressed
//!
//! [attributes]
//! device_id = { role = "identifier" }
//! lat = { role = "quasi_identifier" }
//! lon = { role = "quasi_identifier" }
//! ts = { role = "quasi_identifier" }
//! activity = { role = "insensitive" }
//! ```

use super::bucketization::Method;
use super::file::{MaxUnicity, PolicyFile, PrivacySpec, Role};
use super::requirements::RiskThresholds;
use crate::cloaking::{CloakingOptions, LabelStyle};

/// The finest quadtree level when `max_level` is not given: about 2 m at the equator.
pub const DEFAULT_MAX_LEVEL: u8 = 24;

/// A checked cloaking policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Cloaking {
    /// The algorithm's parameters.
    pub options: CloakingOptions,
    /// The latitude column.
    pub latitude: String,
    /// The longitude column.
    pub longitude: String,
    /// The time column.
    pub time: String,
    /// The subject column (`privacy.person`).
    pub subject: String,
    /// `privacy.max_unicity`, if set.
    pub max_unicity: Option<MaxUnicity>,
}

/// With pseudonyms, the share of subjects unique from [`UNICITY_WARNING_POINTS`] points of
/// their label trace above which a cloaking warns (`max_unicity` refuses instead): a
/// pseudonym links every event of its subject, so a trace unique from two points singles the
/// subject out to whoever saw them at two places and times.
pub const UNICITY_WARNING: f64 = 0.5;
/// The points of [`UNICITY_WARNING`].
pub const UNICITY_WARNING_POINTS: usize = 2;

/// The cloaking keys of `[privacy]` that are set, by name.
fn set_keys(privacy: &PrivacySpec) -> Vec<&'static str> {
    [
        (privacy.latitude.is_some(), "latitude"),
        (privacy.longitude.is_some(), "longitude"),
        (privacy.time.is_some(), "time"),
        (privacy.max_cell_side.is_some(), "max_cell_side"),
        (privacy.max_level.is_some(), "max_level"),
        (privacy.window.is_some(), "window"),
        (privacy.max_window.is_some(), "max_window"),
        (privacy.cells.is_some(), "cells"),
        (privacy.max_unicity.is_some(), "max_unicity"),
        (privacy.labels.is_some(), "labels"),
    ]
    .into_iter()
    .filter_map(|(set, name)| set.then_some(name))
    .collect()
}

/// Checks the cloaking keys against the method and the attributes: `Ok(None)` for another
/// method (no cloaking key may be set), else the cloaking.
pub(super) fn check(file: &PolicyFile) -> std::result::Result<Option<Cloaking>, String> {
    let privacy = &file.privacy;
    let set = set_keys(privacy);
    if privacy.method != Method::Cloaking {
        return match set.first() {
            Some(key) => Err(format!(
                "privacy.{key} applies to method = \"cloaking\", not to {}",
                privacy.method.name()
            )),
            None => Ok(None),
        };
    }
    let refused = [
        (privacy.k_rows.is_some(), "k_rows"),
        (privacy.person_id.is_some(), "person_id"),
        (privacy.k_persons.is_some(), "k_persons"),
        (privacy.k_map.is_some(), "k_map"),
        (privacy.delta_presence.is_some(), "delta_presence"),
        (
            // max_unique_share applies to every method: the labels take the quasi-identifiers'
            // place
            RiskThresholds {
                max_unique_share: None,
                ..privacy.thresholds()
            }
            .any(),
            "max_*_risk and max_leakage",
        ),
        (file.transformation.is_some(), "[transformation]"),
        (file.population.is_some(), "[population]"),
    ];
    if let Some((_, key)) = refused.iter().find(|(set, _)| *set) {
        return Err(format!("{key} does not apply to method = \"cloaking\""));
    }
    let subject = privacy.person.clone().ok_or(
        "method = \"cloaking\" needs privacy.person, the column identifying the subject \
         (person or device) of each event: k counts distinct subjects",
    )?;
    match file.attributes.get(&subject).map(|a| a.role) {
        Some(Role::Identifier) => {}
        Some(role) => {
            return Err(format!(
                "privacy.person '{subject}' is {}: the subject of a cloaking is an identifier \
                 (dropped, or published as a per-release pseudonym with pseudonym = true)",
                role.name()
            ));
        }
        None => {} // person_column names the missing attribute
    }
    let column = |key: &str, value: &Option<String>| -> std::result::Result<String, String> {
        let name = value
            .clone()
            .ok_or_else(|| format!("method = \"cloaking\" needs privacy.{key}, a column name"))?;
        match file.attributes.get(&name) {
            None => Err(format!(
                "privacy.{key} names '{name}', which is not an attribute of the policy"
            )),
            Some(a) if a.role != Role::QuasiIdentifier => Err(format!(
                "privacy.{key} '{name}' is {}: the position and time of a cloaking are \
                 quasi-identifiers (role = \"quasi_identifier\", no hierarchy)",
                a.role.name()
            )),
            Some(a) if a.hierarchy.is_some() => Err(format!(
                "attribute '{name}' ({key}) has a hierarchy, but cloaking makes its own cells and \
                 windows: remove the hierarchy"
            )),
            Some(_) => Ok(name),
        }
    };
    let latitude = column("latitude", &privacy.latitude)?;
    let longitude = column("longitude", &privacy.longitude)?;
    let time = column("time", &privacy.time)?;
    for (name, spec) in &file.attributes {
        if spec.role == Role::QuasiIdentifier && ![&latitude, &longitude, &time].contains(&name) {
            return Err(format!(
                "attribute '{name}' is a quasi-identifier, but cloaking generalizes only the \
                 position (privacy.latitude, privacy.longitude) and time (privacy.time): make it \
                 an identifier (dropped) or insensitive (published as it is)"
            ));
        }
        let own = spec.own_requirement(name);
        if own.is_constrained() {
            return Err(format!(
                "attribute '{name}': {} do not apply to method = \"cloaking\"",
                own.policy_keys().join(", ")
            ));
        }
    }
    let max_cell_side_m = privacy
        .max_cell_side
        .ok_or("method = \"cloaking\" needs privacy.max_cell_side, the largest acceptable cell side in metres")?;
    let window_us = parse_duration(
        "window",
        privacy
            .window
            .as_deref()
            .ok_or("method = \"cloaking\" needs privacy.window, the base window (e.g. \"15m\")")?,
    )?;
    let max_window_us = match &privacy.max_window {
        Some(text) => parse_duration("max_window", text)?,
        None => window_us,
    };
    let window_doublings = doublings(window_us, max_window_us).ok_or_else(|| {
        format!(
            "privacy.max_window must be privacy.window times a power of two (1, 2, 4, …): \
             windows double up to it; got {} and {}",
            privacy.max_window.as_deref().unwrap_or_default(),
            privacy.window.as_deref().unwrap_or_default()
        )
    })?;
    let k =
        u32::try_from(privacy.k).map_err(|_| format!("privacy.k = {} is too large", privacy.k))?;
    let options = CloakingOptions {
        k,
        max_cell_side_m,
        max_level: privacy.max_level.unwrap_or(DEFAULT_MAX_LEVEL),
        window_us,
        window_doublings,
        variant: privacy.cells.unwrap_or_default(),
        labels: match privacy.labels.unwrap_or_default() {
            super::LocalLabels::ValueFree => LabelStyle::ValueFree,
            super::LocalLabels::Exact => LabelStyle::Exact,
        },
    };
    options.check().map_err(|m| format!("privacy.{m}"))?;
    if let Some(limit) = privacy.max_unicity {
        let points = crate::cloaking::unicity::UNICITY_POINTS;
        if !(1..=points).contains(&limit.points) {
            return Err(format!(
                "privacy.max_unicity.points is the number of points an adversary knows, 1 to \
                 {points}, got {}",
                limit.points
            ));
        }
        if !(0.0..=1.0).contains(&limit.share) {
            return Err(format!(
                "privacy.max_unicity.share is a share of subjects between 0 and 1, got {}",
                limit.share
            ));
        }
    }
    Ok(Some(Cloaking {
        options,
        latitude,
        longitude,
        time,
        subject,
        max_unicity: privacy.max_unicity,
    }))
}

/// `d` with `max = window · 2^d`, if any.
fn doublings(window: i64, max: i64) -> Option<u32> {
    (0..=40).find(|&d| window.checked_shl(d) == Some(max) && (window << d) >> d == window)
}

/// Microseconds of a duration such as `"15m"`: a positive whole number and a unit, `s`, `m`
/// (or `min`), `h` or `d`.
pub fn parse_duration(key: &str, text: &str) -> std::result::Result<i64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let seconds: i64 = match unit.trim() {
        "s" => 1,
        "m" | "min" => 60,
        "h" => 3_600,
        "d" => 86_400,
        _ => 0,
    };
    match number.parse::<i64>() {
        Ok(n) if n > 0 && seconds > 0 => n
            .checked_mul(seconds * 1_000_000)
            .ok_or_else(|| format!("privacy.{key} is too long")),
        _ => Err(format!(
            "privacy.{key} must be a duration such as \"15m\": a positive whole number and a \
             unit (s, m, h or d), got \"{text}\""
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("window", "15m"), Ok(15 * 60 * 1_000_000));
        assert_eq!(parse_duration("window", "2h"), Ok(7_200 * 1_000_000));
        assert_eq!(parse_duration("window", "1d"), Ok(86_400 * 1_000_000));
        assert!(
            parse_duration("window", "0m")
                .unwrap_err()
                .contains("got \"0m\"")
        );
        assert!(parse_duration("window", "15 minutes").is_err());
        assert_eq!(doublings(15, 60), Some(2));
        assert_eq!(doublings(15, 15), Some(0));
        assert_eq!(doublings(15, 45), None);
        assert_eq!(doublings(15, 10), None);
    }
}
