//! Persons and rows: the check that warns when a policy counts rows on data that has several
//! rows per person.
//!
//! k-anonymity counts rows unless the policy names the person column (`[privacy] person`). On
//! 1:M data (visits, claims, prescriptions) a class of k rows may then hold fewer than k
//! persons. When no person column is named, every identifier column is checked: the share of
//! rows whose (non-NULL) value appears in another row too. An identifier that repeats is
//! likely a person id, and the caller warns, saying how to name it.

use std::sync::Arc;

use datafusion::arrow::array::Array;
use datafusion::common::hash_utils::{QualityRandomState, create_hashes};
use datafusion::dataframe::DataFrame;
use datafusion::error::Result;
use datafusion::execution::memory_pool::MemoryConsumer;
use datafusion::prelude::{SessionContext, ident};
use futures::StreamExt;

use crate::word_runs::SpilledRuns;

use super::{Policy, Role};

/// An identifier column whose values repeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepeatedIdentifier {
    /// The column.
    pub column: String,
    /// Rows whose value some other row has too (NULLs never count as repeats).
    pub repeated_rows: u64,
    /// Rows of the input.
    pub rows: u64,
}

impl RepeatedIdentifier {
    /// The one-line warning (counts only, never values), as the command line prints it.
    pub fn warning(&self) -> String {
        format!("warning: {}", self.message())
    }

    /// [`RepeatedIdentifier::warning`] without its `warning: ` prefix, as a report lists it.
    pub fn message(&self) -> String {
        let share = 100.0 * self.repeated_rows as f64 / self.rows.max(1) as f64;
        format!(
            "identifier '{column}' repeats: {share:.1}% of the rows ({repeated} of \
             {rows}) share their value with another row, so a class of k rows may hold fewer \
             than k persons; if '{column}' identifies persons, add `person = \"{column}\"` to \
             [privacy]: k then counts persons, and the column is still not published",
            column = self.column,
            repeated = self.repeated_rows,
            rows = self.rows,
        )
    }
}

impl Policy {
    /// The identifier columns of the registered input whose values repeat, when the policy
    /// names no person column (empty when it does). One scan per identifier column, counted
    /// in the session's memory pool (see [`repeats`]).
    pub async fn repeated_identifiers(
        &self,
        ctx: &SessionContext,
    ) -> Result<Vec<RepeatedIdentifier>> {
        if self.person.is_some() {
            return Ok(Vec::new());
        }
        let mut repeated = Vec::new();
        for column in self.columns.iter().filter(|c| c.role == Role::Identifier) {
            let values = ctx
                .table(self.name.as_str())
                .await?
                .select(vec![ident(&column.name)])?;
            let (rows, repeated_rows) = repeats(values).await?;
            if repeated_rows > 0 {
                repeated.push(RepeatedIdentifier {
                    column: column.name.clone(),
                    repeated_rows,
                    rows,
                });
            }
        }
        Ok(repeated)
    }
}

/// The rows of the one column of `values`, and those whose (non-NULL) value another row has
/// too. Each value is one word: a fixed-width value of at most 8 bytes its bits (exact), any
/// other value a 64-bit hash of it, where two different values that collide count as
/// repeats (so the warning can only overstate them, never miss one; about 1 in 3,000 at 100M
/// distinct values). The words are counted as sorted runs in the memory pool, spilled to
/// disk when it refuses more ([`crate::word_runs`]).
pub(crate) async fn repeats(values: DataFrame) -> Result<(u64, u64)> {
    let task = values.task_ctx();
    let pool = Arc::clone(task.memory_pool());
    let disk = Arc::clone(&task.runtime_env().disk_manager);
    let reservation = MemoryConsumer::new("anon repeated identifiers").register(&pool);
    let mut stream = values.execute_stream().await?;
    let (mut rows, mut words) = (0u64, Vec::<u64>::new());
    let mut runs = SpilledRuns::default();
    let mut hashes = Vec::new();
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        let column = batch.column(0);
        rows += batch.num_rows() as u64;
        let nulls = column.logical_nulls();
        let is_null = |row: usize| nulls.as_ref().is_some_and(|n| n.is_null(row));
        let data = column.to_data();
        match column.data_type().primitive_width() {
            Some(width) if width <= 8 && data.buffers().len() == 1 => {
                let bytes =
                    &data.buffers()[0].as_slice()[data.offset() * width..][..data.len() * width];
                words.extend(
                    bytes
                        .chunks_exact(width)
                        .enumerate()
                        .filter(|&(row, _)| !is_null(row))
                        .map(|(_, value)| {
                            let mut word = [0u8; 8];
                            word[..width].copy_from_slice(value);
                            u64::from_le_bytes(word)
                        }),
                );
            }
            _ => {
                hashes.clear();
                hashes.resize(batch.num_rows(), 0);
                create_hashes([column], &QualityRandomState::with_seed(0), &mut hashes)?;
                words.extend(
                    hashes
                        .iter()
                        .enumerate()
                        .filter(|&(row, _)| !is_null(row))
                        .map(|(_, &hash)| hash),
                );
            }
        }
        // the words and the radix sort's second buffer
        if let Err(refused) = reservation.try_resize(2 * words.capacity() * size_of::<u64>()) {
            if !disk.tmp_files_enabled() {
                return Err(refused);
            }
            runs.spill_words(std::mem::take(&mut words), 64, &disk)?;
            reservation.resize(0);
        }
    }
    let mut repeated = 0u64;
    let mut add = |size: usize| {
        if size > 1 {
            repeated += size as u64;
        }
    };
    if runs.is_empty() {
        crate::sort::radix_sort_on_all_cores(&mut words, 0, 64);
        words
            .chunk_by(|a, b| a == b)
            .for_each(|group| add(group.len()));
    } else {
        if !words.is_empty() {
            runs.spill_words(words, 64, &disk)?;
        }
        runs.merge(add)?;
    }
    Ok((rows, repeated))
}

#[cfg(test)]
mod tests {
    use super::super::{PersonPublished, Policy};

    fn policy(privacy: &str, pid_role: &str) -> Policy {
        let text = format!(
            "[input]\npath = \"v.csv\"\n[privacy]\n{privacy}\n[attributes]\n\
             pid = {{ role = \"{pid_role}\" }}\n\
             zip = {{ role = \"quasi_identifier\", hierarchy = {{ kind = \"mask\", length = 5 }} }}\n"
        );
        Policy::from_toml("test.toml", std::path::Path::new("."), &text).unwrap()
    }

    /// k persons hold at least k rows, so the rows-k is k_rows but never below k; the older
    /// form keeps k as rows and k_persons as persons.
    #[test]
    fn k_counts_persons_and_rows_k_is_never_below_it() {
        for (privacy, rows_k, persons_k) in [
            ("k = 10\nperson = \"pid\"", 10, 10),
            ("k = 10\nperson = \"pid\"\nk_rows = 3", 10, 10),
            ("k = 10\nperson = \"pid\"\nk_rows = 20", 20, 10),
            ("k = 4\nperson_id = \"pid\"\nk_persons = 2", 4, 2),
        ] {
            let p = policy(privacy, "identifier");
            assert_eq!(p.requirements().k, rows_k, "{privacy}");
            let person = p.person().unwrap();
            assert_eq!(person.k_persons, persons_k, "{privacy}");
            assert_eq!(person.k_counts_persons, privacy.contains("person ="));
            let bound = p
                .requirements()
                .sensitive
                .iter()
                .find(|s| s.attribute == "pid")
                .and_then(|s| s.persons);
            assert_eq!(bound, Some(persons_k), "{privacy}");
        }
    }

    #[test]
    fn what_is_published_of_the_person_column_follows_its_role_and_pseudonym() {
        let published =
            |privacy: &str, role: &str| policy(privacy, role).person().unwrap().published;
        assert_eq!(
            published("k = 2\nperson = \"pid\"", "identifier"),
            PersonPublished::Dropped
        );
        assert_eq!(
            published("k = 2\nperson = \"pid\"\npseudonym = true", "identifier"),
            PersonPublished::Pseudonym
        );
        assert_eq!(
            published("k = 2\nperson = \"pid\"", "insensitive"),
            PersonPublished::AsIs
        );
        assert!(policy("k = 2", "identifier").person().is_none());
    }

    /// Repeats counted in memory and in spilled runs agree with a brute-force count: 50,000
    /// integer ids (2,000 of them NULL, which never repeat) and their text forms, in batches of
    /// 4,096, under a pool of 64 KiB (the words take 800 KB: several runs) and an unbounded
    /// one; with the disk off, the small pool refuses.
    #[tokio::test]
    async fn repeats_in_memory_and_in_runs_equal_a_brute_force_count() {
        use std::collections::HashMap;
        use std::sync::Arc;

        use datafusion::arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
        use datafusion::execution::disk_manager::{DiskManagerBuilder, DiskManagerMode};
        use datafusion::execution::memory_pool::{
            GreedyMemoryPool, MemoryPool, UnboundedMemoryPool,
        };
        use datafusion::execution::runtime_env::RuntimeEnvBuilder;
        use datafusion::prelude::{SessionConfig, SessionContext};

        use super::repeats;

        let mut state = 9u64;
        let ids: Vec<Option<i64>> = (0..50_000)
            .map(|row| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (row % 25 != 0).then_some(((state >> 33) % 60_000) as i64)
            })
            .collect();
        let mut counts = HashMap::<i64, u64>::new();
        for id in ids.iter().flatten() {
            *counts.entry(*id).or_default() += 1;
        }
        let expected: u64 = counts.values().filter(|&&c| c > 1).sum();
        let texts: Vec<Option<String>> =
            ids.iter().map(|id| id.map(|v| format!("p-{v}"))).collect();
        let batches: Vec<RecordBatch> = (0..ids.len())
            .step_by(4096)
            .map(|start| {
                let end = (start + 4096).min(ids.len());
                RecordBatch::try_from_iter([
                    (
                        "id",
                        Arc::new(Int64Array::from(ids[start..end].to_vec())) as ArrayRef,
                    ),
                    (
                        "text",
                        Arc::new(StringArray::from(texts[start..end].to_vec())) as ArrayRef,
                    ),
                ])
                .unwrap()
            })
            .collect();
        let context = |pool: Arc<dyn MemoryPool>, disk: DiskManagerMode| {
            let runtime = RuntimeEnvBuilder::new()
                .with_memory_pool(pool)
                .with_disk_manager_builder(DiskManagerBuilder::default().with_mode(disk))
                .build_arc()
                .unwrap();
            SessionContext::new_with_config_rt(SessionConfig::new(), runtime)
        };
        for pool in [
            Arc::new(GreedyMemoryPool::new(64 * 1024)) as Arc<dyn MemoryPool>,
            Arc::new(UnboundedMemoryPool::default()),
        ] {
            let ctx = context(pool, DiskManagerMode::OsTmpDirectory);
            for column in ["id", "text"] {
                let values = ctx
                    .read_batches(batches.clone())
                    .unwrap()
                    .select_columns(&[column])
                    .unwrap();
                assert_eq!(
                    repeats(values).await.unwrap(),
                    (50_000, expected),
                    "{column}"
                );
            }
        }
        let ctx = context(
            Arc::new(GreedyMemoryPool::new(64 * 1024)),
            DiskManagerMode::Disabled,
        );
        let values = ctx
            .read_batches(batches)
            .unwrap()
            .select_columns(&["id"])
            .unwrap();
        let refused = repeats(values).await.unwrap_err();
        assert!(crate::errors::is_memory_exhausted(&refused), "{refused}");
    }
}
