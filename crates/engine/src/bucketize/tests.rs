//! Hand-built example in the spirit of seed 002 §1.1, random-table properties, and a
//! brute-force check that the attack never pins a value the release does not determine.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, StringArray};

use super::attack::{SensitiveBuckets, fingerprint_attack, first_pinned_attribute};
use super::groups::pk_angelize;
use super::*;
use crate::rng::SplitMix64;

/// A column whose codes are already in value order; `labels` name the codes.
fn column(name: &str, labels: &[&str], codes: Vec<u32>) -> EncodedColumn {
    let values: ArrayRef = Arc::new(StringArray::from(labels.to_vec()));
    EncodedColumn {
        name: name.into(),
        codes,
        values,
        numeric: None,
    }
}

fn numeric(name: &str, codes: Vec<u32>, cardinality: usize) -> EncodedColumn {
    let labels: Vec<String> = (0..cardinality).map(|i| i.to_string()).collect();
    EncodedColumn {
        name: name.into(),
        codes,
        values: Arc::new(StringArray::from(labels)),
        numeric: Some((0..cardinality).map(|i| i as f64).collect()),
    }
}

const PHYSICIANS: [&str; 4] = ["A", "B", "C", "D"];
const SPECIALTIES: [&str; 3] = ["cardiology", "neurology", "oncology"];
const DIAGNOSES: [&str; 4] = ["arrhythmia", "hypertension", "leukemia", "migraine"];

/// Twelve patients, ages 21..55 (one each), four physicians with three patients each. Each
/// physician has one specialty and — in this small clinic — one diagnosis:
/// A cardiology/hypertension, B cardiology/arrhythmia, C oncology/leukemia,
/// D neurology/migraine.
///
/// | record | age | sex | physician |
/// |---|---|---|---|
/// | 1 | 21 | F | A |   | 2 | 23 | M | C |   | 3 | 25 | F | D |
/// | 4 | 31 | M | A |   | 5 | 33 | F | D |   | 6 | 35 | M | B |
/// | 7 | 41 | F | C |   | 8 | 43 | M | B |   | 9 | 45 | F | A |
/// | 10 | 51 | M | D |  | 11 | 53 | F | C |  | 12 | 55 | M | B |
fn clinic() -> MsaTable {
    let physician = vec![0, 2, 3, 0, 3, 1, 2, 1, 0, 3, 2, 1];
    let specialty_of = [0u32, 0, 2, 1];
    let diagnosis_of = [1u32, 0, 2, 3];
    let ages: Vec<u32> = (0..12).collect(); // codes of 21, 23, ..., 55 in order
    let sex = (0..12).map(|i| (i % 2) as u32).collect();
    MsaTable {
        quasi_identifiers: vec![numeric("age", ages, 12), column("sex", &["F", "M"], sex)],
        sensitive: vec![
            column("physician", &PHYSICIANS, physician.clone()),
            column(
                "specialty",
                &SPECIALTIES,
                physician
                    .iter()
                    .map(|&p| specialty_of[p as usize])
                    .collect(),
            ),
            column(
                "diagnosis",
                &DIAGNOSES,
                physician
                    .iter()
                    .map(|&p| diagnosis_of[p as usize])
                    .collect(),
            ),
        ],
    }
}

fn clinic_options() -> CkOptions {
    CkOptions {
        c: 1,
        k: 3,
        lambda: 2,
        refinement: Refinement::Strict,
        external_factor: Some("physician".into()),
        dependency_threshold: 0.5,
    }
}

#[test]
fn clinic_weights_tie_and_the_external_factor_picks_physician() {
    // U(specialty | physician) = U(diagnosis | physician) = 1 (functional);
    // U(diagnosis | specialty) = (ln 4 − ½ ln 2) / ln 4 = 0.75 (cardiology splits 3/3);
    // U(physician | specialty) = 0.75 likewise; diagnosis ↔ physician is one-to-one (U = 1),
    // diagnosis → specialty functional. Every attribute has weight 2: a tie, which the
    // external factor gives to physician (seed §5.2: "disease and physician have equal
    // weights, we select physician because of some other external factors").
    let dependencies = weights::analyse(&clinic(), &clinic_options()).unwrap();
    assert_eq!(dependencies.weights, vec![2, 2, 2]);
    assert_eq!(dependencies.linking, 0);
    assert_eq!(dependencies.linking_reason, "external factor");
    assert!((dependencies.uncertainty[1][2] - 0.75).abs() < 1e-12);
    // a functional dependency is exactly 1, whatever the rounding of the entropies' sums
    // (a threshold of 1 must count it)
    assert_eq!(dependencies.uncertainty[0][1], 1.0);
    assert_eq!(dependencies.uncertainty[2][1], 1.0);
    assert_eq!(dependencies.determined, vec![false, true, true]);
    // without χ the tie goes to the larger total dependency: physician 2.0, diagnosis 2.0,
    // specialty 1.5 → physician and diagnosis tie again → policy order: physician
    let mut options = clinic_options();
    options.external_factor = None;
    let dependencies = weights::analyse(&clinic(), &options).unwrap();
    assert_eq!(dependencies.linking, 0);
    assert_eq!(dependencies.linking_reason, "policy order");
}

#[test]
fn the_attack_pins_every_record_of_the_pk_angelization_release() {
    // (p,k)-angelization, p = 2, k = 3: runs of three by age, each p-sensitive, are both GB
    // and sensitive batch: {1,2,3}, {4,5,6}, {7,8,9}, {10,11,12}. Specialty cells:
    //   b0 {A,C,D}: {card, neuro, onco}   b1 {A,D,B}: {card, card, neuro}
    //   b2 {C,B,A}: {card, card, onco}    b3 {D,C,B}: {card, neuro, onco}
    // Step 1 (common values): A is in b0, b1, b2: {card,neuro,onco} ∩ {card,neuro} ∩
    // {card,onco} = {card}; B (b1, b2, b3) likewise {card}. C: b0 ∩ b2 ∩ b3 = {card, onco};
    // D: b0 ∩ b1 ∩ b3 = {card, neuro}. Step 2 (left-over) in b0: A takes its card, leaving
    // {neuro, onco}: C → onco, D → neuro. Every physician is pinned.
    // Diagnosis cells: b0 {hyp, leuk, mig}, b1 {hyp, arr, mig}, b2 {arr, hyp, leuk},
    // b3 {arr, leuk, mig}: the intersections alone pin A → hyp (b0∩b1∩b2), B → arr, C → leuk,
    // D → mig. So all twelve records are fully pinned, e.g. record 1 (21, F, physician A):
    // cardiology, hypertension.
    let table = clinic();
    let release = pk_angelize(&table, 2, 3).unwrap();
    assert_eq!(release.bucket_of, vec![0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]);
    let st = release.sensitive_buckets(&table);
    let outcome = fingerprint_attack(&st, 0, &[false, true, true]);
    assert_eq!(outcome.pinned[1], vec![Some(0), Some(0), Some(2), Some(1)]);
    assert_eq!(outcome.pinned[2], vec![Some(1), Some(0), Some(2), Some(3)]);
    let report = outcome.report(&st);
    assert_eq!((report.partially_pinned, report.fully_pinned), (12, 12));
    // record 1 sits in b0 with physician A
    assert!(outcome.is_pinned(&st, 0, 0, 1) && outcome.is_pinned(&st, 0, 0, 2));
    // and the brute force agrees: the cells admit one specialty map only
    let brute = brute_force_pins(&st, 0, 1);
    assert_eq!(brute, vec![Some(0), Some(0), Some(2), Some(1)]);
}

#[test]
fn the_attack_pins_nothing_of_the_ck_release_of_the_same_clinic() {
    // (c,k) with c = 1, k = 3, λ = 3 (strict; specialty and diagnosis are determined by the
    // physician, so both are protected). Busiest first (all have 3; ties by code): A opens a
    // cohort with R = ⌈3/3⌉ = 1 round. Specialty has one covering value (cardiology, 3 ≥ R
    // records), so the busiest physician with another specialty joins: C (B is cardiology
    // too). {A, C}: covering specialties {card, onco}, diagnoses {hyp, leuk}, 6 ≥ k·R records,
    // one round of 6 with two values of everything: closed. Then B opens, D (neurology) joins:
    // {B, D}. Two FBs: {A×3, C×3} and {B×3, D×3}; every physician is in one FB only, whose
    // cells hold two specialties and two diagnoses, three copies each.
    // The attack's intersections are those cells (two values): nothing pinned. Even an
    // adversary who also counts — the brute force over every specialty map — cannot pin
    // anyone: swapping A's and C's specialties (or B's and D's) gives the same cells.
    let table = clinic();
    let mut options = clinic_options();
    options.lambda = 3;
    let (release, summary) = ck_anonymize(&table, &options).unwrap();
    assert_eq!(summary.cohorts, 2);
    assert_eq!(bucket_sizes(&release), vec![6, 6]);
    let a_and_c = [0usize, 1, 3, 6, 8, 10]; // records 1, 2, 4, 7, 9, 11
    for r in 0..12 {
        assert_eq!(
            release.bucket_of[r] == 0,
            a_and_c.contains(&r),
            "record {}",
            r + 1
        );
    }
    let st = release.sensitive_buckets(&table);
    let outcome = fingerprint_attack(&st, 0, &[false, true, true]);
    let report = outcome.report(&st);
    assert_eq!((report.partially_pinned, report.fully_pinned), (0, 0));
    assert_eq!(brute_force_pins(&st, 0, 1), vec![None; 4]);
    assert_eq!(brute_force_pins(&st, 0, 2), vec![None; 4]);
    // GBs are the runs of three by age: ages 21–25, 31–35, 41–45, 51–55
    assert_eq!(release.group_ranges.len(), 4);
    assert_eq!(release.group_ranges[1][0], (3, 5));
}

#[test]
fn with_lambda_two_the_clinic_is_dealt_round_robin() {
    // λ = 2: A opens with R = ⌈3/2⌉ = 2 rounds and needs 2 covering values held by ≥ 2
    // records: C joins as above. The line is A's records (1, 4, 9), then C's (2, 7, 11)
    // (ordered by specialty, diagnosis); dealt round-robin into 2 rounds:
    // round 0 = records 1, 9, 7, round 1 = 4, 2, 11. Likewise B (6, 8, 12) and D (3, 5, 10):
    // round 0 = 6, 12, 5, round 1 = 8, 3, 10. Each physician is in both rounds of its cohort,
    // each round holds both specialties: intersections {card, onco} / {card, neuro}.
    let table = clinic();
    let (release, _) = ck_anonymize(&table, &clinic_options()).unwrap();
    let expected = [0, 1, 3, 1, 2, 2, 0, 3, 0, 3, 1, 2];
    assert_eq!(release.bucket_of, expected.to_vec());
    let st = release.sensitive_buckets(&table);
    let report = fingerprint_attack(&st, 0, &[false, true, true]).report(&st);
    assert_eq!(report.partially_pinned, 0);
    // What the seed's adversary cannot do, counting can: round 0 holds A twice and C once
    // over {card, card, onco}; only cardiology has two copies, so A is cardiology. The
    // brute force sees it; the checker, which follows the seed's procedure, does not (see
    // the `attack` module documentation).
    assert_eq!(brute_force_pins(&st, 0, 1)[0], Some(0));
}

fn bucket_sizes(release: &BucketizedRelease) -> Vec<usize> {
    let mut sizes = vec![0; release.buckets];
    for &b in &release.bucket_of {
        sizes[b as usize] += 1;
    }
    sizes
}

/// Every map linking value → value of `a` consistent with the cells; per linking value, the
/// value all of them agree on.
fn brute_force_pins(st: &SensitiveBuckets, linking: usize, a: usize) -> Vec<Option<u32>> {
    let values = st.cardinalities[linking];
    let domain = st.cardinalities[a] as u64;
    let mut agreed: Vec<Option<Option<u32>>> = vec![None; values];
    let total = domain.pow(values as u32);
    let mut consistent_maps = 0;
    for index in 0..total {
        let map: Vec<u32> = (0..values)
            .map(|v| ((index / domain.pow(v as u32)) % domain) as u32)
            .collect();
        let consistent = (0..st.buckets()).all(|b| {
            let mut implied: Vec<u32> = st
                .cell(linking, b)
                .iter()
                .map(|&v| map[v as usize])
                .collect();
            implied.sort_unstable();
            implied == st.cell(a, b)
        });
        if !consistent {
            continue;
        }
        consistent_maps += 1;
        for v in 0..values {
            agreed[v] = match agreed[v] {
                None => Some(Some(map[v])),
                Some(Some(x)) if x == map[v] => Some(Some(x)),
                _ => Some(None),
            };
        }
    }
    assert!(consistent_maps > 0, "the true map is always consistent");
    agreed.into_iter().map(|a| a.flatten()).collect()
}

/// A random table: `linking` values 0..p, `determined` = a random function of it, `free`
/// independent; QIs random.
fn random_table(rng: &mut SplitMix64, rows: usize, physicians: u64, values: u64) -> MsaTable {
    let function: Vec<u32> = (0..physicians).map(|_| rng.below(values) as u32).collect();
    let linking: Vec<u32> = (0..rows).map(|_| rng.below(physicians) as u32).collect();
    let determined = linking.iter().map(|&p| function[p as usize]).collect();
    let free = (0..rows).map(|_| rng.below(values) as u32).collect();
    let labels = |n: u64| (0..n).map(|i| format!("v{i}")).collect::<Vec<_>>();
    let physician_labels = labels(physicians);
    let value_labels = labels(values);
    // the domain is every label, used or not (a cardinality is the domain's size)
    fn as_str(l: &[String]) -> Vec<&str> {
        l.iter().map(String::as_str).collect()
    }
    MsaTable {
        quasi_identifiers: vec![
            numeric("age", (0..rows).map(|_| rng.below(20) as u32).collect(), 20),
            column(
                "sex",
                &["F", "M"],
                (0..rows).map(|_| rng.below(2) as u32).collect(),
            ),
        ],
        sensitive: vec![
            column("physician", &as_str(&physician_labels), linking),
            column("specialty", &as_str(&value_labels), determined),
            column("diagnosis", &as_str(&value_labels), free),
        ],
    }
}

#[test]
fn the_attack_never_pins_what_the_cells_do_not_determine() {
    // tiny releases with random buckets: whatever the attack pins, every assignment
    // consistent with the cells agrees on (brute force), and it is the true value
    let mut rng = SplitMix64(11);
    let mut pinned_seen = 0;
    for _ in 0..400 {
        let rows = 4 + rng.below(9) as usize;
        let (physicians, values) = (2 + rng.below(3), 2 + rng.below(2));
        let table = random_table(&mut rng, rows, physicians, values);
        let buckets = 1 + rng.below(4) as usize;
        let mut bucket_of: Vec<u32> = (0..rows)
            .map(|_| rng.below(buckets as u64) as u32)
            .collect();
        // dense bucket ids
        let mut used: Vec<u32> = bucket_of.clone();
        used.sort_unstable();
        used.dedup();
        for b in &mut bucket_of {
            *b = used.binary_search(b).unwrap() as u32;
        }
        let st = SensitiveBuckets::from_columns(&table.sensitive, &bucket_of, used.len());
        let outcome = fingerprint_attack(&st, 0, &[false, true, false]);
        // the refinement's shortcut (step 1 only) agrees with the whole attack on whether
        // anything is pinned: specialty is determined exactly, so nothing is refuted
        assert!(outcome.linked[1]);
        let any_pinned = outcome.pinned[1].iter().any(Option::is_some);
        assert_eq!(
            first_pinned_attribute(&st, 0, &[false, true, false]),
            any_pinned.then_some(1)
        );
        let brute = brute_force_pins(&st, 0, 1);
        let truth = |v: usize| {
            (0..rows)
                .find(|&r| table.sensitive[0].codes[r] == v as u32)
                .map(|r| table.sensitive[1].codes[r])
        };
        if outcome.linked[1] {
            for (v, pin) in outcome.pinned[1].iter().enumerate() {
                if let Some(x) = pin {
                    pinned_seen += 1;
                    assert_eq!(brute[v], Some(*x), "pinned beyond what the cells determine");
                    assert_eq!(truth(v), Some(*x));
                }
            }
        }
        // the report counts, record by record, what `is_pinned` says
        let report = outcome.report(&st);
        let (mut per_attribute, mut partial, mut full) = ([0u64; 3], 0u64, 0u64);
        for b in 0..st.buckets() {
            for &v in st.cell(0, b) {
                let pinned: Vec<usize> = (1..3)
                    .filter(|&a| outcome.is_pinned(&st, b, v, a))
                    .collect();
                for &a in &pinned {
                    per_attribute[a] += 1;
                }
                partial += u64::from(!pinned.is_empty());
                full += u64::from(pinned.len() == 2);
            }
        }
        assert_eq!(
            report.pinned_per_attribute,
            vec![
                ("specialty".to_string(), per_attribute[1]),
                ("diagnosis".to_string(), per_attribute[2])
            ]
        );
        assert_eq!(
            (report.partially_pinned, report.fully_pinned),
            (partial, full)
        );
        // the free attribute is pinned exactly where its cell is homogeneous
        for b in 0..st.buckets() {
            let cell = st.cell(2, b);
            for &v in st.cell(0, b) {
                assert_eq!(
                    outcome.is_pinned(&st, b, v, 2),
                    cell.iter().all(|&x| x == cell[0])
                );
            }
        }
    }
    assert!(
        pinned_seen > 50,
        "the test must exercise pins: {pinned_seen}"
    );
}

#[test]
fn ck_releases_of_random_tables_keep_every_promise() {
    let mut rng = SplitMix64(5);
    let mut published = 0;
    for round in 0..300 {
        let rows = 20 + rng.below(80) as usize;
        let (physicians, values) = (3 + rng.below(8), 2 + rng.below(5));
        let table = random_table(&mut rng, rows, physicians, values);
        let options = CkOptions {
            c: 1 + rng.below(2) as usize,
            k: 2 + rng.below(4) as usize,
            lambda: 1 + rng.below(3) as usize,
            refinement: if round % 2 == 0 {
                Refinement::Strict
            } else {
                Refinement::Relax
            },
            external_factor: Some("physician".into()),
            dependency_threshold: 0.5,
        };
        let Ok((release, summary)) = ck_anonymize(&table, &options) else {
            continue;
        };
        published += 1;
        let dependencies = &summary.dependencies;
        // every record exactly once: one FB and one GB each, every FB non-empty
        assert_eq!(release.bucket_of.len(), rows);
        assert_eq!(release.group_of.len(), rows);
        let sizes = bucket_sizes(&release);
        assert!(
            sizes.iter().all(|&s| s >= options.k),
            "FB below k: {sizes:?}"
        );
        let mut group_sizes = vec![0; release.group_ranges.len()];
        for &g in &release.group_of {
            group_sizes[g as usize] += 1;
        }
        assert!(group_sizes.iter().all(|&s| s >= options.k));
        // GB ranges cover their records
        for r in 0..rows {
            for (q, c) in table.quasi_identifiers.iter().enumerate() {
                let (lo, hi) = release.group_ranges[release.group_of[r] as usize][q];
                assert!(lo <= c.codes[r] && c.codes[r] <= hi);
            }
        }
        let st = release.sensitive_buckets(&table);
        assert_eq!(st.records(), rows);
        for b in 0..st.buckets() {
            for a in 0..st.attributes.len() {
                let distinct = super::attack::runs(st.cell(a, b)).count();
                assert!(
                    distinct > options.c,
                    "FB {b} attribute {a}: {distinct} values"
                );
            }
            let linking = dependencies.linking;
            assert!(
                super::attack::runs(st.cell(linking, b)).all(|(_, n)| n <= options.lambda),
                "λ broken"
            );
        }
        // the ST cells are the table's values, attribute by attribute
        for (a, c) in table.sensitive.iter().enumerate() {
            let mut all: Vec<u32> = st.columns[a].clone();
            all.sort_unstable();
            let mut original = c.codes.clone();
            original.sort_unstable();
            assert_eq!(all, original);
        }
        // the attack pins no protected attribute, through the linking attribute or any other
        // attribute that determines one
        let outcome = fingerprint_attack(&st, dependencies.linking, &dependencies.determined);
        let protected = fingerprint::protected_attributes(dependencies, options.refinement);
        for (a, &p) in protected.iter().enumerate() {
            if p && outcome.linked[a] {
                assert!(outcome.pinned[a].iter().all(Option::is_none));
            }
        }
        for (linker, mask) in fingerprint::protected_links(dependencies, options.refinement) {
            let outcome = fingerprint_attack(&st, linker, &dependencies.determines[linker]);
            for (a, &p) in mask.iter().enumerate() {
                if p && outcome.linked[a] {
                    assert!(
                        outcome.pinned[a].iter().all(Option::is_none),
                        "round {round}: through {linker}, attribute {a} pinned"
                    );
                }
            }
        }
    }
    assert!(
        published > 100,
        "only {published} of 300 random tables published"
    );
}

#[test]
fn bad_parameters_are_refused_by_name() {
    let table = clinic();
    let mut options = clinic_options();
    options.lambda = 0;
    let e = ck_anonymize(&table, &options).unwrap_err().to_string();
    assert!(e.contains("lambda must be at least 1"), "{e}");
    let mut options = clinic_options();
    options.k = 13;
    let e = ck_anonymize(&table, &options).unwrap_err().to_string();
    assert!(
        e.contains("12 records cannot form a bucket of k = 13"),
        "{e}"
    );
    let mut options = clinic_options();
    options.c = 4; // 5 distinct values per FB: the clinic has 4 physicians
    options.external_factor = None;
    let e = ck_anonymize(&table, &options).unwrap_err().to_string();
    assert!(e.contains("c + 1 = 5 distinct values"), "{e}");
    let mut twice = clinic();
    twice.sensitive[2].name = "physician".into();
    let e = ck_anonymize(&twice, &clinic_options())
        .unwrap_err()
        .to_string();
    assert!(e.contains("'physician' is named twice"), "{e}");
    let mut options = clinic_options();
    options.external_factor = Some("ward".into());
    let e = ck_anonymize(&table, &options).unwrap_err().to_string();
    assert!(e.contains("external_factor names 'ward'"), "{e}");
}

#[test]
fn ncp_of_the_clinic_gbs_by_hand() {
    // GBs by age: {21,23,25}, {31,33,35}, {41,43,45}, {51,53,55}; age codes 0..11 over values
    // 0..11 here (numeric codes = values), span 11. Each GB spans 2 codes: 2/11 per record.
    // Sex: every GB holds F and M (2 of 2 distinct): 1 per record.
    // NCP = mean over 12 records × 2 QIs = (2/11 + 1) / 2 = 13/22 = 59.09 %.
    let table = clinic();
    let (release, _) = ck_anonymize(&table, &clinic_options()).unwrap();
    let ncp = utility::ncp_percent(&table, &release);
    assert!((ncp - 100.0 * 13.0 / 22.0).abs() < 1e-9, "{ncp}");
}
