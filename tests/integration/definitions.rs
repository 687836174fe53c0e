//! `docs/definitions.md` defines every figure of the profile: each JSON key of a profile with
//! every optional section filled (person id, population, original with a key and a hierarchy,
//! an ordered and a categorical sensitive attribute, relink, risky classes, fingerprint
//! attack) must appear in it as `` `key` ``; so must each key of the release report of
//! `anon apply` and `anon anonymize`.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use datafusion::prelude::SessionContext;
use datafusion_anonymity::generalize::Hierarchy;
use datafusion_anonymity_engine::profile::{FingerprintOptions, ProfileOptions, profile};

use crate::tables::{batch, ints, strings};

/// Every key of every object in `value`, recursively (inside arrays too).
fn collect_keys(value: &serde_json::Value, keys: &mut BTreeSet<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, inner) in map {
                keys.insert(key.clone());
                collect_keys(inner, keys);
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                collect_keys(item, keys);
            }
        }
        _ => {}
    }
}

/// The profile of a small release with every optional section, as JSON.
async fn full_profile() -> serde_json::Value {
    let ids = [1, 2, 3, 4, 5, 6];
    let diseases = ["flu", "hiv", "flu", "cancer", "flu", "hiv"];
    let salaries = [3, 4, 5, 6, 11, 8];
    let persons = [10, 10, 11, 12, 13, 14];
    let original = batch(vec![
        ("id", ints(&ids)),
        (
            "zip",
            strings(&["47677", "47602", "47678", "47905", "47909", "47906"]),
        ),
        ("age", ints(&[29, 22, 27, 43, 52, 47])),
        ("disease", strings(&diseases)),
        ("salary", ints(&salaries)),
        ("pid", ints(&persons)),
    ]);
    let release = || {
        batch(vec![
            ("id", ints(&ids)),
            (
                "zip",
                strings(&["476**", "476**", "476**", "4790*", "4790*", "4790*"]),
            ),
            ("age", strings(&["2*", "2*", "2*", ">=40", ">=40", ">=40"])),
            ("disease", strings(&diseases)),
            ("salary", ints(&salaries)),
            ("pid", ints(&persons)),
        ])
    };
    let population = batch(vec![
        (
            "zip",
            strings(&[
                "476**", "476**", "476**", "476**", "4790*", "4790*", "4790*",
            ]),
        ),
        (
            "age",
            strings(&["2*", "2*", "2*", "2*", ">=40", ">=40", ">=40"]),
        ),
    ]);
    // a bucketized release's sensitive table: physician A in both buckets
    let sensitive_table = batch(vec![
        ("bucket_id", ints(&[0, 0, 0, 1, 1, 1])),
        ("physician", strings(&["A", "B", "C", "A", "D", "E"])),
        (
            "specialty",
            strings(&["card", "onco", "neuro", "card", "onco", "derm"]),
        ),
    ]);
    let ctx = SessionContext::new();
    datafusion_anonymity_engine::register(&ctx).unwrap();
    for (name, table) in [
        ("anon", release()),
        ("other", release()),
        ("orig", original),
        ("pop", population),
        ("st", sensitive_table),
    ] {
        ctx.register_batch(name, table).unwrap();
    }
    let mut options = ProfileOptions::new("anon", vec!["zip".into(), "age".into()]);
    options.sensitive = vec!["disease".into(), "salary".into()];
    options.person_id = Some("pid".into());
    options.population = Some("pop".into());
    options.original = Some("orig".into());
    options.key = Some("id".into());
    options.relink = Some("other".into());
    options.hierarchies = HashMap::from([("zip".to_string(), Arc::new(Hierarchy::mask("zip", 5)))]);
    options.queries = 20;
    options.show_values = true;
    options.fingerprint = Some(FingerprintOptions {
        sensitive_table: "st".into(),
        bucket_column: "bucket_id".into(),
        linking: "physician".into(),
        determined: None,
    });
    let report = profile(&ctx, &options).await.unwrap();
    serde_json::to_value(&report).unwrap()
}

#[tokio::test]
async fn every_profile_json_key_is_defined_in_docs() {
    let json = full_profile().await;
    // every optional section is filled, so that its keys are collected
    for section in [
        &json["person_id"],
        &json["anonymity"]["k_persons"],
        &json["anonymity"]["sensitive"][1]["t_ordered"],
        &json["anonymity"]["sensitive"][1]["tuple_diversity"],
        &json["risk"]["population"],
        &json["utility"],
        &json["utility"]["whd_uniform"],
        &json["utility"]["aecs"],
        &json["utility"]["classification_metric"],
        &json["utility"]["private_mutual_information_utility"],
        &json["relink"],
        &json["risky_classes"],
        &json["fingerprint_attack"],
    ] {
        assert!(!section.is_null(), "a section is missing: {json:#}");
    }
    let mut keys = BTreeSet::new();
    collect_keys(&json, &mut keys);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/definitions.md");
    let page = std::fs::read_to_string(path).unwrap();
    let missing: Vec<&String> = keys
        .iter()
        .filter(|key| !page.contains(&format!("`{key}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/definitions.md does not define these JSON keys of the profile (each must appear \
         as `key`, in backticks): {}",
        missing
            .iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

/// The JSON keys of `value` (recursively) that `docs/definitions.md` does not define as
/// `` `key` ``; the attribute names keying `max_leakage` are data, not keys.
pub(crate) fn undefined_keys(value: &serde_json::Value) -> Vec<String> {
    let mut value = value.clone();
    if let Some(thresholds) = value.get_mut("thresholds") {
        thresholds["max_leakage"] = serde_json::json!({});
    }
    let mut keys = BTreeSet::new();
    collect_keys(&value, &mut keys);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/definitions.md");
    let page = std::fs::read_to_string(path).unwrap();
    keys.into_iter()
        .filter(|key| !page.contains(&format!("`{key}`")))
        .collect()
}

/// Every JSON key of the release report, from `anon apply` and from `anon anonymize`, with
/// every optional part filled (a population with k-map and δ-presence, an l requirement,
/// thresholds, `--utility`), is defined in `docs/definitions.md`.
#[test]
fn every_release_report_json_key_is_defined_in_docs() {
    let t = super::report::Table::new(None);
    let mut population = String::from("g\n");
    for (g, n) in [
        ("g-a1", 3),
        ("g-a2", 3),
        ("g-b1", 2),
        ("g-b2", 2),
        ("g-c1", 1),
    ] {
        population.push_str(&format!("{g}\n").repeat(n));
    }
    std::fs::write(t.path("population.csv"), population).unwrap();
    let privacy = "k_map = 3\ndelta_presence = { max = 1.0 }\n\
                   l_diversity = { kind = \"distinct\", l = 2 }\nmax_leakage = { g = 0.9 }";
    let population = "[population]\npath = \"population.csv\"\n";
    let fixed = t.policy(
        "fixed.toml",
        privacy,
        &format!("{population}[transformation]\ng = 1\n"),
    );
    let searched = t.policy("searched.toml", privacy, population);
    for (command, policy) in [("apply", fixed), ("anonymize", searched)] {
        let output = super::anon(&[
            command,
            "--quiet",
            "--utility",
            "--policy",
            &policy,
            "--out",
            &t.arg(&format!("{command}.parquet")),
            "--report",
            &t.arg(&format!("{command}.json")),
        ]);
        assert!(output.status.success(), "{}", super::stderr(&output));
        let json = crate::read_json(t.path(&format!("{command}.json")));
        // every optional part is filled, so that its keys are collected
        for part in [
            &json["utility"],
            &json["frequency_set_rows"],
            &json["publish"]["verification"]["population"],
            &json["publish"]["verification"]["sensitive"][0]["l"],
            &json["publish"]["post_analytics"]["journalist"],
            &json["thresholds"]["max_leakage"]["g"],
        ] {
            assert!(!part.is_null(), "{command}: a part is missing: {json:#}");
        }
        let missing = undefined_keys(&json);
        assert!(
            missing.is_empty(),
            "docs/definitions.md does not define these JSON keys of the {command} report (each \
             must appear as `key`, in backticks): {missing:?}"
        );
    }
}

/// `docs/functions.md` lists every user-facing SQL function of the crate, and nothing else:
/// a function added without its reference row (or a row left for a removed one) fails here.
#[test]
fn every_sql_function_is_in_the_function_reference() {
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let reference = std::fs::read_to_string(root.join("docs/functions.md")).unwrap();
    // rows of the function table: "| `name(...)` ..."
    let documented: BTreeSet<String> = reference
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once('(').map(|(name, _)| name.to_string()))
        .filter(|name| !name.contains(' '))
        .collect();
    let registered: BTreeSet<String> = datafusion_anonymity::functions::user_functions()
        .iter()
        .map(|f| f.name().to_string())
        .chain(
            datafusion_anonymity::generalize::recoding_functions()
                .iter()
                .map(|f| f.name().to_string()),
        )
        .chain(
            datafusion_anonymity::perturbation::perturbation_functions()
                .iter()
                .map(|f| f.name().to_string()),
        )
        .chain(
            datafusion_anonymity::functions::location_functions()
                .iter()
                .map(|f| f.name().to_string()),
        )
        .collect();
    let missing: Vec<_> = registered.difference(&documented).collect();
    let stale: Vec<_> = documented.difference(&registered).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "docs/functions.md lacks {missing:?} and documents unknown {stale:?}"
    );
}

/// `docs/functions.md` is exactly what the functions' own `Documentation` renders to
/// (`datafusion_anonymity::docs::function_docs_markdown`): a description changed in the code
/// without regenerating the file (`dev/update_function_docs.sh`, which runs this test with
/// `UPDATE_FUNCTION_DOCS=1` to write it) fails here, naming the first line that differs.
#[test]
fn function_reference_is_generated_from_the_documentation() {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/functions.md");
    let generated = datafusion_anonymity::docs::function_docs_markdown();
    if std::env::var_os("UPDATE_FUNCTION_DOCS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap();
    if on_disk != generated {
        let lines = on_disk.lines().count().max(generated.lines().count());
        let (line, (on_disk_line, generated_line)) = on_disk
            .lines()
            .chain(std::iter::repeat("<end of file>"))
            .zip(generated.lines().chain(std::iter::repeat("<end of text>")))
            .take(lines)
            .enumerate()
            .find(|(_, (a, b))| a != b)
            .unwrap_or((lines, ("<line ends differ>", "<line ends differ>")));
        panic!(
            "docs/functions.md is stale: run dev/update_function_docs.sh. First difference at \
             line {}:\n  file:      {on_disk_line}\n  generated: {generated_line}",
            line + 1
        );
    }
}

/// Every requirement a policy can set, and every measure key a report gives for it, is
/// defined in `docs/definitions.md`.
#[test]
fn every_policy_requirement_is_defined_in_docs() {
    use datafusion_anonymity_engine::policy::{
        BetaLikeness, LDiversity, LDiversityKind, SensitiveRequirement,
    };
    use datafusion_anonymity_engine::policy::{TCloseness, TClosenessKind};
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let definitions = std::fs::read_to_string(root.join("docs/definitions.md")).unwrap();
    let every = SensitiveRequirement {
        l: Some(LDiversity {
            kind: LDiversityKind::Distinct,
            l: 2.0,
            c: None,
        }),
        t: Some(TCloseness {
            kind: TClosenessKind::Equal,
            t: 0.5,
        }),
        alpha: Some(0.5),
        beta: Some(BetaLikeness {
            beta: 1.0,
            enhanced: true,
        }),
        delta: Some(1.0),
        tuple_diversity: Some(0.5),
        persons: Some(2),
        ..SensitiveRequirement::unconstrained("s")
    };
    let mut missing = Vec::new();
    for bound in every.bounds() {
        for key in [bound.measure.policy_key(), bound.measure.key()] {
            if !definitions.contains(&format!("`{key}`")) {
                missing.push(key);
            }
        }
    }
    let population = datafusion_anonymity_engine::policy::PopulationRequirement {
        k_map: Some(2),
        delta_presence: Some(datafusion_anonymity_engine::policy::DeltaPresence {
            min: 0.0,
            max: 0.5,
        }),
    };
    for key in population.policy_keys() {
        if !definitions.contains(&format!("`{key}`")) {
            missing.push(key);
        }
    }
    assert!(missing.is_empty(), "docs/definitions.md lacks {missing:?}");
}
