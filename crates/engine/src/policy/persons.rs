//! Persons and rows: the check that warns when a policy counts rows on data that has several
//! rows per person.
//!
//! k-anonymity counts rows unless the policy names the person column (`[privacy] person`). On
//! 1:M data (visits, claims, prescriptions) a class of k rows may then hold fewer than k
//! persons. When no person column is named, every identifier column is checked: the share of
//! rows whose (non-NULL) value appears in another row too. An identifier that repeats is
//! likely a person id, and the caller warns, saying how to name it.

use datafusion::error::Result;
use datafusion::functions_aggregate::expr_fn::{count, sum};
use datafusion::logical_expr::{col, lit};
use datafusion::prelude::{SessionContext, ident};

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
    /// The one-line warning (counts only, never values).
    pub fn warning(&self) -> String {
        let share = 100.0 * self.repeated_rows as f64 / self.rows.max(1) as f64;
        format!(
            "warning: identifier '{column}' repeats: {share:.1}% of the rows ({repeated} of \
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
    /// names no person column (empty when it does). One aggregation per identifier column.
    pub async fn repeated_identifiers(
        &self,
        ctx: &SessionContext,
    ) -> Result<Vec<RepeatedIdentifier>> {
        if self.person.is_some() {
            return Ok(Vec::new());
        }
        let mut repeated = Vec::new();
        for column in self.columns.iter().filter(|c| c.role == Role::Identifier) {
            let per_value = ctx
                .table(self.name.as_str())
                .await?
                .aggregate(vec![ident(&column.name)], vec![count(lit(1)).alias("n")])?;
            // NULL ids are grouped together: their rows are rows, never repeats
            let batches = per_value
                .aggregate(
                    vec![],
                    vec![
                        sum(col("n")).alias("rows"),
                        sum(datafusion::prelude::when(
                            ident(&column.name).is_not_null().and(col("n").gt(lit(1))),
                            col("n"),
                        )
                        .otherwise(lit(0))?)
                        .alias("repeated"),
                    ],
                )?
                .collect()
                .await?;
            let value = |i: usize| -> u64 {
                batches
                    .first()
                    .and_then(|b| {
                        datafusion::arrow::compute::cast(
                            b.column(i),
                            &datafusion::arrow::datatypes::DataType::UInt64,
                        )
                        .ok()
                    })
                    .and_then(|a| {
                        use datafusion::arrow::array::{Array, AsArray};
                        let a = a.as_primitive::<datafusion::arrow::datatypes::UInt64Type>();
                        (!a.is_empty() && a.is_valid(0)).then(|| a.value(0))
                    })
                    .unwrap_or(0)
            };
            let (rows, repeated_rows) = (value(0), value(1));
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
}
