//! Adult with set-based and hierarchical Mondrian: the figures of BENCHMARKS.md "Set-based
//! local recoding (issue 37)" (`cargo test --release -p datafusion-anonymity-engine --lib
//! adult_sets -- --ignored --nocapture`).

use datafusion::prelude::SessionContext;

use super::mondrian::mondrian;
use super::{SUPPRESSED, axes, evaluate};
use crate::policy::Policy;

const QIS: [&str; 8] = [
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
];

/// The bundled Adult policy's text with `[privacy]` replaced; `sets`: no hierarchies.
fn adult_policy(privacy: &str, sets: bool) -> String {
    let mut text = format!(
        "name = \"adult\"\n[input]\npath = \"adult.parquet\"\n[privacy]\n{privacy}\n[attributes]\n"
    );
    for qi in QIS {
        if sets {
            text.push_str(&format!("{qi} = {{ role = \"quasi_identifier\" }}\n"));
        } else {
            text.push_str(&format!(
                "{qi} = {{ role = \"quasi_identifier\", hierarchy = {{ kind = \"tree\", file = \
                 \"hierarchies/adult_hierarchy_{qi}.csv\" }} }}\n"
            ));
        }
    }
    text.push_str("salary-class = { role = \"sensitive\" }\n");
    text
}

#[tokio::test]
#[ignore]
async fn adult_sets() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/adult");
    let only_sets = std::env::var("SETS_ONLY").is_ok();
    for sets in [true, false] {
        if only_sets && !sets {
            continue;
        }
        for privacy in [
            "k = 5",
            "k = 5\nl_diversity = { kind = \"distinct\", l = 2 }",
            "k = 10",
        ] {
            if only_sets && privacy != "k = 5" {
                continue;
            }
            let text = adult_policy(privacy, sets);
            let mut policy =
                Policy::from_toml("adult.toml", std::path::Path::new(dir), &text).unwrap();
            let ctx = SessionContext::new();
            policy.register_with(&ctx, false).await.unwrap();
            let freq = policy.frequency_set(&ctx, None).await.unwrap();
            let req = policy.requirements().clone();
            // warm-up, then the best of 5
            let mut release = mondrian(&freq, &req).unwrap();
            let mut took = std::time::Duration::MAX;
            for _ in 0..5 {
                let start = std::time::Instant::now();
                release = mondrian(&freq, &req).unwrap();
                took = took.min(start.elapsed());
            }
            let e = evaluate(&freq, &req, &release).unwrap();
            let axes = axes(&freq).unwrap();
            let mut per_qi = vec![0.0; freq.qis().len()];
            for (leaf, &c) in release.class_of.iter().enumerate() {
                let n = freq.sizes()[leaf] as f64;
                for (q, cost) in per_qi.iter_mut().enumerate() {
                    *cost += n * if c == SUPPRESSED {
                        1.0
                    } else {
                        axes[q].cost(&freq.qis()[q], release.cells_of(c as usize)[q])
                    };
                }
            }
            let parts: Vec<String> = per_qi
                .iter()
                .zip(freq.qi_names())
                .map(|(c, n)| format!("{n} {:.4}", c / freq.rows() as f64))
                .collect();
            println!(
                "{} {}: loss {:.4}, {} classes, {} suppressed, {:?}; {}",
                if sets { "sets" } else { "hierarchies" },
                privacy.replace('\n', ", "),
                e.loss,
                e.classes,
                e.suppressed_rows,
                took,
                parts.join(", ")
            );
        }
    }
}
