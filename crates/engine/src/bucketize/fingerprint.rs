//! Functions 2–3 of seed 002: c-diverse fingerprint buckets under the linkability control λ,
//! refined so that no linkable attribute can be pinned down through linked buckets.
//!
//! ## Construction: cohorts of linking values
//! The linking values (the maximum-weighted attribute, e.g. physicians) are taken busiest
//! first and grouped into **cohorts**. A cohort's records are dealt into R = ⌈n_max / λ⌉
//! **rounds**, one FB each, where n_max is its busiest member's record count. The records are
//! lined up member after member — members ordered by their values of the protected
//! attributes, then by linking value — and dealt round-robin: record i of the line goes to
//! round i mod R. So a member's records sit in consecutive rounds, at most ⌈n / R⌉ ≤ λ in any
//! FB, and a value of the first protected attribute held by R or more of the cohort's records
//! occupies a run of the line at least R long: it is in **every** round. A linking value never
//! leaves its cohort, so the FBs linked through it are some of its cohort's rounds (the
//! seed's "minimize the linkability").
//!
//! A cohort is closed once
//! - it holds at least k·R records, every round has at least k and is c-diverse (every
//!   attribute at least c + 1 distinct values), and
//! - every protected attribute (below) has two **covering values**, each held by at least R
//!   of the cohort's records.
//!
//! For the first protected attribute the two covering values are then in every round, so for
//! any member v the intersection over v's FBs holds at least two values: the attack's first
//! step pins nothing, and its left-over step, which needs a pinned value to start, pins
//! nothing either. This is equation (4) (strict: every attribute the linking value determines
//! is protected) or (5) (relax: non-secret ones are not). Further protected attributes are
//! left to the refinement's check below.
//!
//! Members are added busiest first; while a protected attribute lacks a second covering value,
//! the busiest remaining linking value with another value joins instead. The check of the
//! rounds is repeated only after the cohort grew by a tenth, so building is near-linear.
//! Values left at the end that cannot close a cohort of their own join the last cohort (its
//! busiest member, hence R and λ, are unchanged, and its covering values only grow).
//!
//! ## Refinement (Function 3)
//! After construction the attack is run on the buckets. Any protected value it pins merges the
//! linking value's cohort with the next one — the seed's "merge the FBs" at the level where it
//! keeps λ — and the check repeats.
//!
//! The attack is then run through every *other* attribute that determines one in the data
//! (a diagnosis determines the specialty as a physician does; an adversary may know either).
//! Cohorts are formed on the linking attribute, so their buckets do not cut those links; if
//! that attack pins a protected value, all cohorts are merged into one, whose round-robin
//! buckets hold every value with at least R records — so every such attribute's covering
//! values are in every bucket — and the checks repeat. Buckets grow (R is set by the busiest
//! linking value), GT is unaffected. If one cohort is left and an attack still pins a value,
//! the table cannot be published under these parameters, and the error says so.

use datafusion::error::{DataFusionError, Result};

use super::attack::{SensitiveBuckets, fingerprint_attack, first_pinned_attribute};
use super::weights::Dependencies;
use super::{CkOptions, MsaTable, Refinement};

/// The fingerprint buckets.
#[derive(Debug, Clone)]
pub struct FingerprintBuckets {
    /// Per record, its FB.
    pub bucket_of: Vec<u32>,
    /// FBs.
    pub buckets: usize,
    /// Cohorts after refinement.
    pub cohorts: usize,
    /// Cohorts merged by the refinement and by the leftover rule.
    pub cohorts_merged: usize,
    /// The buckets' cells, as the refinement's last check saw them.
    pub cells: SensitiveBuckets,
}

/// The attributes refinement must keep unlinkable through `linker`: those it determines in
/// the data, except (relax) the non-secret ones.
fn protected_through(
    dependencies: &Dependencies,
    refinement: Refinement,
    linker: usize,
) -> Vec<bool> {
    (0..dependencies.attributes.len())
        .map(|a| {
            dependencies.determines[linker][a]
                && !(refinement == Refinement::Relax && dependencies.is_non_secret(a))
        })
        .collect()
}

/// Every attribute that determines others in the data, with [`protected_through`] it. An
/// adversary may know a person's value of any of them, not only of the linking attribute.
pub fn protected_links(
    dependencies: &Dependencies,
    refinement: Refinement,
) -> Vec<(usize, Vec<bool>)> {
    (0..dependencies.attributes.len())
        .map(|linker| (linker, protected_through(dependencies, refinement, linker)))
        .filter(|(_, mask)| mask.iter().any(|&p| p))
        .collect()
}

/// [`protected_through`] the linking attribute.
pub fn protected_attributes(dependencies: &Dependencies, refinement: Refinement) -> Vec<bool> {
    protected_through(dependencies, refinement, dependencies.linking)
}

/// Per attribute and code, the stamp of the last round that counted it (distinct counts
/// without clearing).
struct Marks {
    marks: Vec<Vec<u32>>,
    stamp: u32,
}

struct Linking<'a> {
    table: &'a MsaTable,
    /// Per linking value, its records (input order).
    records: Vec<Vec<u32>>,
    /// Per linking value, per protected attribute (in `protected` order), its determined value.
    determined_values: Vec<Vec<u32>>,
    protected: Vec<usize>,
    c: usize,
    k: usize,
    lambda: usize,
}

impl Linking<'_> {
    fn rounds_of(&self, members: &[u32]) -> usize {
        let busiest = members
            .iter()
            .map(|&v| self.records[v as usize].len())
            .max()
            .unwrap_or(0);
        busiest.div_ceil(self.lambda).max(1)
    }

    /// The members' records lined up for dealing: members ordered by their values of the
    /// protected attributes, then by linking value; each member's records in input order.
    /// Record i of the line goes to round i mod R, so round r is the line's records r, r + R,
    /// r + 2R, …; nothing else is materialized.
    fn line(&self, members: &[u32]) -> Vec<u32> {
        let mut members: Vec<u32> = members.to_vec();
        members.sort_by(|&a, &b| {
            self.determined_values[a as usize]
                .cmp(&self.determined_values[b as usize])
                .then(a.cmp(&b))
        });
        members
            .iter()
            .flat_map(|&v| self.records[v as usize].iter().copied())
            .collect()
    }

    /// Dealt from `line` into `rounds` rounds, every round has ≥ k records and ≥ c + 1
    /// distinct values of every attribute. Round r holds ⌈(n − r) / R⌉ records, the last
    /// the fewest (⌊n / R⌋). Counting stops at c + 1, so a diverse round costs a few reads
    /// per attribute.
    fn rounds_valid(&self, line: &[u32], rounds: usize, seen: &mut Marks) -> bool {
        if rounds == 0 || line.len() / rounds < self.k.max(1) {
            return false;
        }
        for round in 0..rounds {
            for (a, column) in self.table.sensitive.iter().enumerate() {
                seen.stamp += 1;
                let stamp = seen.stamp;
                let marks = &mut seen.marks[a];
                let mut distinct = 0;
                for &r in line[round..].iter().step_by(rounds) {
                    let mark = &mut marks[column.codes[r as usize] as usize];
                    if *mark != stamp {
                        *mark = stamp;
                        distinct += 1;
                        if distinct > self.c {
                            break;
                        }
                    }
                }
                if distinct <= self.c {
                    return false;
                }
            }
        }
        true
    }

    /// The protected attributes (positions in `protected`) with fewer than two values held
    /// by at least `rounds` of the members' records, and for each the value it has.
    fn lacking_cover(&self, members: &[u32], rounds: usize) -> Vec<(usize, u32)> {
        let mut lacking = Vec::new();
        let mut totals: Vec<(u32, usize)> = Vec::new();
        for p in 0..self.protected.len() {
            totals.clear();
            for &v in members {
                let value = self.determined_values[v as usize][p];
                let n = self.records[v as usize].len();
                match totals.iter_mut().find(|(x, _)| *x == value) {
                    Some(t) => t.1 += n,
                    None => totals.push((value, n)),
                }
            }
            let covering: Vec<u32> = totals
                .iter()
                .filter(|(_, n)| *n >= rounds)
                .map(|(x, _)| *x)
                .collect();
            if covering.len() < 2 {
                // the value to differ from: the one covering, else the busiest member's
                let have = covering
                    .first()
                    .copied()
                    .unwrap_or(self.determined_values[members[0] as usize][p]);
                lacking.push((p, have));
            }
        }
        lacking
    }
}

/// Makes and refines the fingerprint buckets; see the module documentation.
pub fn make_buckets(
    table: &MsaTable,
    dependencies: &Dependencies,
    options: &CkOptions,
) -> Result<FingerprintBuckets> {
    let linking_column = &table.sensitive[dependencies.linking];
    let protected_mask = protected_attributes(dependencies, options.refinement);
    let protected: Vec<usize> = (0..protected_mask.len())
        .filter(|&a| protected_mask[a])
        .collect();
    let mut records = vec![Vec::new(); linking_column.cardinality()];
    for (r, &v) in linking_column.codes.iter().enumerate() {
        records[v as usize].push(r as u32);
    }
    let determined_values = records
        .iter()
        .map(|rs| {
            protected
                .iter()
                .map(|&a| {
                    rs.first()
                        .map_or(0, |&r| table.sensitive[a].codes[r as usize])
                })
                .collect()
        })
        .collect();
    let linking = Linking {
        table,
        records,
        determined_values,
        protected,
        c: options.c,
        k: options.k,
        lambda: options.lambda,
    };
    let mut order: Vec<u32> = (0..linking.records.len() as u32)
        .filter(|&v| !linking.records[v as usize].is_empty())
        .collect();
    order.sort_by_key(|&v| (std::cmp::Reverse(linking.records[v as usize].len()), v));
    let name = &linking_column.name;
    if let Some(&busiest) = order.first() {
        let n = linking.records[busiest as usize].len();
        if n.div_ceil(options.lambda) * options.k > table.rows() {
            return Err(DataFusionError::Plan(format!(
                "(c,k)-anonymization: the most frequent value of the linking attribute '{name}' \
                 has {n} records; with at most lambda = {} of them per bucket it needs {} buckets \
                 of k = {} records, more than the {} records of the table; raise lambda or lower k",
                options.lambda,
                n.div_ceil(options.lambda),
                options.k,
                table.rows()
            )));
        }
    }
    let mut seen = Marks {
        marks: table
            .sensitive
            .iter()
            .map(|c| vec![0u32; c.cardinality()])
            .collect(),
        stamp: 0,
    };
    let mut cohorts: Vec<Vec<u32>> = Vec::new();
    let mut used = vec![false; linking.records.len()];
    let mut merged = 0;
    let mut next = 0;
    'cohorts: while next < order.len() {
        if used[order[next] as usize] {
            next += 1;
            continue;
        }
        let mut members = vec![order[next]];
        used[order[next] as usize] = true;
        let rounds = linking.rounds_of(&members);
        let mut cursor = next + 1;
        let mut total = linking.records[order[next] as usize].len();
        // the size at which the rounds are checked next
        let mut check_at = options.k * rounds;
        loop {
            let lacking = linking.lacking_cover(&members, rounds);
            if lacking.is_empty() && total >= check_at {
                if linking.rounds_valid(&linking.line(&members), rounds, &mut seen) {
                    cohorts.push(members);
                    next += 1;
                    continue 'cohorts;
                }
                check_at = total + total.div_ceil(10);
            }
            let candidate = if let Some(&(p, have)) = lacking.first() {
                order[cursor..].iter().copied().find(|&v| {
                    !used[v as usize] && linking.determined_values[v as usize][p] != have
                })
            } else {
                order[cursor..].iter().copied().find(|&v| !used[v as usize])
            };
            match candidate {
                Some(v) => {
                    used[v as usize] = true;
                    total += linking.records[v as usize].len();
                    members.push(v);
                    while cursor < order.len() && used[order[cursor] as usize] {
                        cursor += 1;
                    }
                }
                None => {
                    // what is left cannot close a cohort: it joins the previous one
                    let Some(last) = cohorts.last_mut() else {
                        let lacking: Vec<usize> = lacking.iter().map(|l| l.0).collect();
                        return Err(unsatisfiable(
                            name,
                            options,
                            &lacking,
                            dependencies,
                            &linking,
                        ));
                    };
                    last.extend(members);
                    for (v, u) in used.iter_mut().enumerate() {
                        if !*u && !linking.records[v].is_empty() {
                            *u = true;
                            last.push(v as u32);
                        }
                    }
                    merged += 1;
                    let rounds = linking.rounds_of(last);
                    if !linking.rounds_valid(&linking.line(last), rounds, &mut seen) {
                        return Err(unsatisfiable(name, options, &[], dependencies, &linking));
                    }
                    break 'cohorts;
                }
            }
        }
    }
    // refinement: merge cohorts until the attack pins no protected value
    let determined = &dependencies.determined;
    loop {
        let (bucket_of, buckets, cohort_of_bucket) = assign(&linking, &cohorts, table.rows());
        let st = SensitiveBuckets::from_columns(&table.sensitive, &bucket_of, buckets);
        // the links of every other determining attribute, checked on a second thread while
        // the attack through the linking attribute runs: cohorts are formed on the linking
        // attribute, so only one cohort for all (each determining attribute's covering
        // values then in every bucket) cuts them
        let other_link_pin = || {
            protected_links(dependencies, options.refinement)
                .into_iter()
                .filter(|(linker, _)| *linker != dependencies.linking)
                .find_map(|(linker, mask)| {
                    // only existence matters here, and these determinations are exact
                    let attributes: Vec<bool> = (0..mask.len())
                        .map(|a| mask[a] && dependencies.determines[linker][a])
                        .collect();
                    first_pinned_attribute(&st, linker, &attributes).map(|a| (linker, a))
                })
        };
        let (outcome, other_pin) = std::thread::scope(|scope| {
            let other_pin = scope.spawn(other_link_pin);
            let outcome = fingerprint_attack(&st, dependencies.linking, determined);
            // a panic in the check is a bug: raise it here
            let other_pin = other_pin
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (outcome, other_pin)
        });
        let offending = protected_mask.iter().enumerate().find_map(|(a, &p)| {
            if !p || !outcome.linked[a] {
                return None;
            }
            outcome.pinned[a].iter().position(Option::is_some)
        });
        let Some(v) = offending else {
            match other_pin {
                None => {
                    return Ok(FingerprintBuckets {
                        bucket_of,
                        buckets,
                        cohorts: cohorts.len(),
                        cohorts_merged: merged,
                        cells: st,
                    });
                }
                Some((linker, a)) if cohorts.len() < 2 => {
                    return Err(DataFusionError::Plan(format!(
                        "(c,k)-anonymization: an adversary who knows a person's '{}' pins '{}' \
                         through linked buckets even with all records in one cohort (raise \
                         lambda, or use refinement = \"relax\" if '{}' is non-secret)",
                        dependencies.attributes[linker],
                        dependencies.attributes[a],
                        dependencies.attributes[a]
                    )));
                }
                Some(_) => {
                    merged += cohorts.len() - 1;
                    let all: Vec<u32> = cohorts.drain(..).flatten().collect();
                    let rounds = linking.rounds_of(&all);
                    if !linking.rounds_valid(&linking.line(&all), rounds, &mut seen) {
                        return Err(unsatisfiable(name, options, &[], dependencies, &linking));
                    }
                    cohorts.push(all);
                    continue;
                }
            }
        };
        let Some(&first_bucket) = linking.records[v].first().map(|&r| &bucket_of[r as usize])
        else {
            return Err(DataFusionError::Internal(
                "(c,k)-anonymization: a pinned linking value has no records".into(),
            ));
        };
        let cohort = cohort_of_bucket[first_bucket as usize];
        if cohorts.len() < 2 {
            return Err(unsatisfiable(name, options, &[], dependencies, &linking));
        }
        let other = if cohort + 1 < cohorts.len() {
            cohort + 1
        } else {
            cohort - 1
        };
        let (low, high) = (cohort.min(other), cohort.max(other));
        let absorbed = cohorts.remove(high);
        cohorts[low].extend(absorbed);
        merged += 1;
        let rounds = linking.rounds_of(&cohorts[low]);
        if !linking.rounds_valid(&linking.line(&cohorts[low]), rounds, &mut seen) {
            return Err(unsatisfiable(name, options, &[], dependencies, &linking));
        }
    }
}

fn unsatisfiable(
    name: &str,
    options: &CkOptions,
    lacking: &[usize],
    dependencies: &Dependencies,
    linking: &Linking<'_>,
) -> DataFusionError {
    let why = match lacking.first() {
        Some(&p) => format!(
            "'{name}' determines '{}', and no two of its values are held by enough records to be \
             in every bucket of the busiest linking values (raise lambda, or use \
             refinement = \"relax\" if it is non-secret)",
            dependencies.attributes[linking.protected[p]]
        ),
        None => format!(
            "the table cannot form buckets of k = {} records with c + 1 = {} distinct values of \
             every sensitive attribute and at most lambda = {} records per value of '{name}'",
            options.k,
            options.c + 1,
            options.lambda
        ),
    };
    DataFusionError::Plan(format!("(c,k)-anonymization: {why}"))
}

/// Bucket ids: the cohorts' rounds, numbered in cohort order. Also each bucket's cohort.
fn assign(
    linking: &Linking<'_>,
    cohorts: &[Vec<u32>],
    rows: usize,
) -> (Vec<u32>, usize, Vec<usize>) {
    let mut bucket_of = vec![0u32; rows];
    let mut next = 0usize;
    let mut cohort_of_bucket = Vec::new();
    for (c, members) in cohorts.iter().enumerate() {
        let rounds = linking.rounds_of(members);
        // record i of the line to round i mod R
        let mut round = 0;
        for record in linking.line(members) {
            bucket_of[record as usize] = (next + round) as u32;
            round += 1;
            if round == rounds {
                round = 0;
            }
        }
        next += rounds;
        cohort_of_bucket.extend(std::iter::repeat_n(c, rounds));
    }
    (bucket_of, next, cohort_of_bucket)
}
