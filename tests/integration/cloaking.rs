//! `anon anonymize` with `method = "cloaking"`, end to end: on generated trips (the release
//! recounted here with plain SQL, independently of the command's own verification), the same
//! seed giving the same bytes, and every bad input refused with one message naming the column
//! or row, never a value, and nothing written.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::{anon, stderr};

use datafusion::arrow::array::AsArray;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Float64Type};
use datafusion::prelude::{ParquetReadOptions, SessionContext};

/// A generated trips table of `rows` rows in `dir`.
pub(super) fn trips(dir: &Path, rows: usize) -> PathBuf {
    let path = dir.join("trips.parquet");
    crate::generate("trips", &path, rows, 42);
    path
}

/// A cloaking policy over a trips table with `privacy` added to its `[privacy]` section.
fn policy(dir: &Path, name: &str, input: &Path, privacy: &str, ts_type: &str) -> String {
    let text = format!(
        "[input]\npath = \"{}\"\n[privacy]\nmethod = \"cloaking\"\nperson = \"device_id\"\n\
         latitude = \"lat\"\nlongitude = \"lon\"\ntime = \"ts\"\n{privacy}\n[attributes]\n\
         device_id = {{ role = \"identifier\" }}\n\
         lat = {{ role = \"quasi_identifier\" }}\n\
         lon = {{ role = \"quasi_identifier\" }}\n\
         ts = {{ role = \"quasi_identifier\"{ts_type} }}\n\
         activity = {{ role = \"insensitive\" }}\n",
        input.display()
    );
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn anonymize(policy: &str, out: &Path, extra: &[&str]) -> Output {
    crate::anonymize_quietly(policy, out, None, extra)
}

async fn scalar(ctx: &SessionContext, sql: &str) -> f64 {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let column = cast(batches[0].column(0), &DataType::Float64).unwrap();
    column.as_primitive::<Float64Type>().value(0)
}

const TOLERANCES: &str = "k = 5\nmax_cell_side = 3000\nwindow = \"15m\"\nmax_window = \"2h\"\n\
                          max_suppression = 0.5\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trips_are_cloaked_and_the_release_recounts_k_subjects_per_label() {
    let dir = tempfile::tempdir().unwrap();
    let input = trips(dir.path(), 20_000);
    let mut results = Vec::new();
    for cells in ["quadtree", "adaptive"] {
        let privacy = format!("{TOLERANCES}pseudonym = true\ncells = \"{cells}\"\n");
        let policy = policy(dir.path(), &format!("{cells}.toml"), &input, &privacy, "");
        let out = dir.path().join(format!("{cells}.parquet"));
        let report = dir.path().join(format!("{cells}.json"));
        let output = anonymize(&policy, &out, &["--report", &report.display().to_string()]);
        assert!(output.status.success(), "{}", stderr(&output));
        let report: serde_json::Value = crate::read_json(&report);
        let ctx = SessionContext::new();
        datafusion_anonymity::register(&ctx).unwrap();
        ctx.register_parquet(
            "release",
            out.to_str().unwrap(),
            ParquetReadOptions::default(),
        )
        .await
        .unwrap();
        ctx.register_parquet(
            "input",
            input.to_str().unwrap(),
            ParquetReadOptions::default(),
        )
        .await
        .unwrap();
        // the position, time and real subject are gone; the pseudonym is not the id
        let columns: Vec<String> = ctx
            .table("release")
            .await
            .unwrap()
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        for gone in ["lat", "lon", "ts"] {
            assert!(!columns.iter().any(|c| c == gone), "{columns:?}");
        }
        let same_ids = scalar(
            &ctx,
            "SELECT count(*) FROM (SELECT DISTINCT device_id FROM release) r \
             JOIN (SELECT DISTINCT device_id FROM input) i USING (device_id)",
        )
        .await;
        assert!(same_ids < 5.0, "{same_ids} pseudonyms equal an id");
        // every label >= k distinct subjects, with k_anonymity(subject) as a user would
        let labels = "cell, cell_min_lat, cell_min_lon, cell_max_lat, cell_max_lon, \
                      window_start, window_end";
        let min = scalar(
            &ctx,
            &format!("SELECT min(k) FROM (SELECT k_anonymity(device_id) AS k FROM release GROUP BY {labels})"),
        )
        .await;
        assert!(min >= 5.0, "{cells}: a label of {min} subjects");
        // written + suppressed = input
        let written = scalar(&ctx, "SELECT count(*) FROM release").await;
        let suppressed = report["suppressed"].as_f64().unwrap();
        assert_eq!(written + suppressed, 20_000.0, "{cells}");
        assert!(suppressed < 10_000.0);
        // tolerances: window at most 2 h, the quadtree cell is the quadkey's
        let longest = scalar(
            &ctx,
            "SELECT max(CAST(window_end AS BIGINT) - CAST(window_start AS BIGINT)) FROM release",
        )
        .await;
        assert!(longest <= 7_200_000_000.0);
        if cells == "quadtree" {
            let mismatched = scalar(
                &ctx,
                "SELECT count(*) FROM release WHERE quadkey_bounds(cell)['min_lat'] <> cell_min_lat \
                 OR quadkey_bounds(cell)['max_lon'] <> cell_max_lon",
            )
            .await;
            assert_eq!(mismatched, 0.0);
        }
        let undefined = crate::definitions::undefined_keys(&report);
        assert!(
            undefined.is_empty(),
            "docs/definitions.md does not define these keys of the cloaking report: {undefined:?}"
        );
        assert_eq!(report["method"], "cloaking");
        assert_eq!(report["subject"], "pseudonym");
        assert!(report["figures"]["min_anonymity"].as_f64().unwrap() >= 5.0);
        assert_eq!(
            report["unicity_input"]["unique"].as_array().unwrap().len(),
            5
        );
        results.push(report["figures"]["median_cell_area_m2"].as_f64().unwrap());
    }
    // the adaptive variant's cells are smaller
    assert!(results[1] < results[0], "{results:?}");
}

/// A cloaked release published as a Delta table (the subject dropped, so the verified file is
/// rewritten without its pseudonyms inside the table's staging) is one commit: the rows of the
/// Parquet release of the same seed, read back by delta-rs, with the cloaking's parameters and
/// verified figures in `commitInfo` and no seed. A second period appends as a new version;
/// another method's release is refused before anything is read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cloaked_release_is_one_delta_commit() {
    use crate::delta::{commit_info, commits, delta_rows, parquet_rows};
    let dir = tempfile::tempdir().unwrap();
    let input = trips(dir.path(), 20_000);
    let policy = policy(dir.path(), "cloak.toml", &input, TOLERANCES, "");
    let (table, parquet) = (
        dir.path().join("release"),
        dir.path().join("release.parquet"),
    );
    let report_path = dir.path().join("report.json").display().to_string();
    let output = anonymize(
        &policy,
        &table,
        &["--format", "delta", "--seed", "5", "--report", &report_path],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let output = anonymize(&policy, &parquet, &["--seed", "5"]);
    assert!(output.status.success(), "{}", stderr(&output));

    assert_eq!(commits(&table), ["00000000000000000000.json"]);
    let (version, rows) = delta_rows(&table, None).await;
    assert_eq!(version, 0);
    assert_eq!(rows, parquet_rows(&parquet).await);
    let report: serde_json::Value = crate::read_json(&report_path);
    assert_eq!(report["publish"]["delta_version"], 0);
    assert_eq!(report["publish"]["rows"], rows.len() as u64);

    let (info, text) = commit_info(&table, 0);
    let release = &info["anonymity"];
    assert_eq!(release["method"], "cloaking");
    assert_eq!(release["k"], 5);
    assert_eq!(release["max_cell_side_m"], 3000.0);
    assert_eq!(release["max_window_s"], 7200.0);
    assert_eq!(release["columns"]["subject"], "device_id");
    assert_eq!(release["figures"]["rows"], rows.len() as u64);
    assert_eq!(
        release["figures"]["labels"],
        report["publish"]["verification"]["labels"]
    );
    assert!(release["figures"]["min_subjects"].as_u64().unwrap() >= 5);
    // the suppressed events: the input's less the rows written (20,000 generated events)
    assert_eq!(
        release["figures"]["suppressed"],
        20_000 - rows.len() as u64,
        "{text}"
    );
    assert_eq!(release["figures"]["suppressed"], report["suppressed"]);
    // the tolerance hints (recounted by cloaking again in the engine's tests): three, none
    // suppressing more than the tolerances of the run
    let hints = report["suppressed_where"]["if_doubled"].as_array().unwrap();
    assert_eq!(hints.len(), 3, "{report}");
    for hint in hints {
        assert!(hint["suppressed"].as_u64().unwrap() <= report["suppressed"].as_u64().unwrap());
    }
    assert_eq!(hints[0]["max_window_s"], 14400.0);
    assert_eq!(hints[1]["max_cell_side_m"], 6000.0);
    assert!(!text.contains("seed"), "{text}");
    // the pseudonyms written for the verification are not in the table
    assert!(!text.contains("__anon_subject"), "{text}");

    // a second period appends as a new version, verified on its own: here the same events
    // again, so version 1 holds every row twice
    let appended = anonymize(
        &policy,
        &table,
        &["--format", "delta", "--append", "--seed", "6"],
    );
    assert!(appended.status.success(), "{}", stderr(&appended));
    assert_eq!(
        commits(&table),
        ["00000000000000000000.json", "00000000000000000001.json"]
    );
    let (version, both) = delta_rows(&table, None).await;
    assert_eq!((version, both.len()), (1, 2 * rows.len()));
    let (info, _) = commit_info(&table, 1);
    assert_eq!(info["anonymity"]["method"], "cloaking");
    assert_eq!(info["anonymity"]["figures"]["rows"], rows.len() as u64);

    // another method is refused before anything is read: this policy's input does not exist,
    // and the refusal is the append's, not the missing file's
    let other = dir.path().join("other.toml");
    std::fs::write(
        &other,
        "[input]\npath = \"missing.parquet\"\n[privacy]\nmethod = \"perturbation\"\nk = 2\n\
         [attributes]\nx = { role = \"quasi_identifier\", perturbation = { kind = \"noise\", \
         level = 0.1 } }\n",
    )
    .unwrap();
    let refused = anonymize(
        &other.display().to_string(),
        &table,
        &["--format", "delta", "--append"],
    );
    assert!(!refused.status.success());
    let message = stderr(&refused);
    assert!(
        message.contains("this release is perturbation, the table's last version cloaking"),
        "{message}"
    );
    assert_eq!(commits(&table).len(), 2);
}

/// Writes `sql`'s result over the generated trips (table `t`) to the Parquet file `out`.
async fn trips_copy(trips: &Path, sql: &str, out: &Path) {
    let ctx = SessionContext::new();
    ctx.register_parquet("t", trips.to_str().unwrap(), ParquetReadOptions::default())
        .await
        .unwrap();
    let frame = ctx.sql(sql).await.unwrap();
    frame
        .write_parquet(
            out.to_str().unwrap(),
            datafusion::dataframe::DataFrameWriteOptions::new().with_single_file_output(true),
            None,
        )
        .await
        .unwrap();
}

/// The `add` actions of version `version` of the Delta table at `dir`.
fn adds(dir: &Path, version: u64) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(dir.join(format!("_delta_log/{version:020}.json"))).unwrap();
    text.lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter_map(|action| action.get("add").cloned())
        .collect()
}

/// A monthly series builds up in one Delta table partitioned by `month` (`[output]
/// partition_by`): each period appended as a new version, its files in one `month=<value>/`
/// directory per month it holds, without the month column (its value is the partition value
/// in the log), read back by delta-rs with the month column as the unpartitioned Parquet
/// release of the same seed has it. An append whose partitioning differs from the table's is
/// refused before anything is read; a NULL month, a partition column that is not insensitive
/// and a partitioned Parquet output are refused, naming the key and the column.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn periods_accumulate_in_a_table_partitioned_by_month() {
    use crate::delta::{commits, delta_rows, parquet_rows, release_dirs};
    let dir = tempfile::tempdir().unwrap();
    let trips = trips(dir.path(), 20_000);
    let (january, later) = (
        dir.path().join("jan.parquet"),
        dir.path().join("feb.parquet"),
    );
    trips_copy(&trips, "SELECT *, '2026-01' AS month FROM t", &january).await;
    // the second period's events fall in two months: a release may span partitions
    trips_copy(
        &trips,
        "SELECT *, CASE WHEN device_id % 2 = 0 THEN '2026-02' ELSE '2026-03' END AS month FROM t",
        &later,
    )
    .await;
    let month = "month = { role = \"insensitive\" }\n";
    let partitioned = "[output]\nformat = \"delta\"\npartition_by = [\"month\"]\n";
    let with = |name: &str, input: &Path, extra: &str| {
        let path = policy(dir.path(), name, input, TOLERANCES, "");
        let mut text = std::fs::read_to_string(&path).unwrap();
        text.push_str(month);
        text.push_str(extra);
        std::fs::write(&path, text).unwrap();
        path
    };
    let table = dir.path().join("series");
    let published = anonymize(
        &with("jan.toml", &january, partitioned),
        &table,
        &["--seed", "5"],
    );
    assert!(published.status.success(), "{}", stderr(&published));
    let feb = with("feb.toml", &later, partitioned);
    let appended = anonymize(&feb, &table, &["--append", "--seed", "6"]);
    assert!(appended.status.success(), "{}", stderr(&appended));
    assert_eq!(commits(&table).len(), 2);

    // the log: partitioned by month; every file in the directory of its partition value
    let metadata = std::fs::read_to_string(table.join("_delta_log/00000000000000000000.json"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find_map(|action| action.get("metaData").cloned())
        .unwrap();
    assert_eq!(metadata["partitionColumns"], serde_json::json!(["month"]));
    let mut months = std::collections::BTreeSet::new();
    for (version, expected) in [(0, vec!["2026-01"]), (1, vec!["2026-02", "2026-03"])] {
        let mut seen = std::collections::BTreeSet::new();
        for add in adds(&table, version) {
            let value = add["partitionValues"]["month"]
                .as_str()
                .unwrap()
                .to_string();
            let path = add["path"].as_str().unwrap();
            assert!(path.contains(&format!("/month={value}/")), "{path}");
            // the file itself has no month column
            let file = std::fs::File::open(table.join(path)).unwrap();
            let reader =
                datafusion::parquet::file::reader::SerializedFileReader::new(file).unwrap();
            use datafusion::parquet::file::reader::FileReader;
            let schema = reader.metadata().file_metadata().schema_descr();
            assert!(schema.columns().iter().all(|c| c.name() != "month"));
            seen.insert(value);
        }
        assert_eq!(seen, expected.iter().map(|m| m.to_string()).collect());
        months.extend(seen);
    }
    assert_eq!(months.len(), 3);

    // read back by delta-rs: the rows (month included) of the two unpartitioned Parquet
    // releases of the same seeds, made by policies without [output]
    let (jan_parquet, feb_parquet) = (
        dir.path().join("jan_release.parquet"),
        dir.path().join("feb_release.parquet"),
    );
    for (name, input, out, seed) in [
        ("jan_plain.toml", &january, &jan_parquet, "5"),
        ("feb_plain.toml", &later, &feb_parquet, "6"),
    ] {
        let run = anonymize(&with(name, input, ""), out, &["--seed", seed]);
        assert!(run.status.success(), "{}", stderr(&run));
    }
    let first = parquet_rows(&jan_parquet).await;
    assert_eq!(delta_rows(&table, Some(0)).await.1, first);
    let mut both = first.clone();
    both.extend(parquet_rows(&feb_parquet).await);
    both.sort();
    assert_eq!(delta_rows(&table, None).await.1, both);

    // an append partitioned otherwise is refused before anything is read (this input does
    // not exist)
    let elsewhere = with(
        "other.toml",
        &dir.path().join("missing.parquet"),
        "[output]\nformat = \"delta\"\n",
    );
    let refused = anonymize(&elsewhere, &table, &["--append"]);
    assert!(!refused.status.success());
    let message = stderr(&refused);
    assert!(
        message.contains(
            "it is partitioned by month, this release by no column (output.partition_by)"
        ),
        "{message}"
    );
    // a NULL month: refused after the verification, naming the column; nothing committed
    // and no release directory left
    let nulls = dir.path().join("nulls.parquet");
    trips_copy(
        &trips,
        "SELECT *, CASE WHEN device_id % 3 = 0 THEN NULL ELSE '2026-04' END AS month FROM t",
        &nulls,
    )
    .await;
    let before = release_dirs(&table);
    let refused = anonymize(
        &with("nulls.toml", &nulls, partitioned),
        &table,
        &["--append"],
    );
    assert!(!refused.status.success());
    let message = stderr(&refused);
    assert!(
        message.contains("output.partition_by: 'month' is NULL in some rows"),
        "{message}"
    );
    assert_eq!(commits(&table).len(), 2);
    assert_eq!(release_dirs(&table), before);

    // --overwrite may change the partitioning: a new version, unpartitioned, of January
    let unpartitioned = with("over.toml", &january, "[output]\nformat = \"delta\"\n");
    let overwritten = anonymize(&unpartitioned, &table, &["--overwrite", "--seed", "5"]);
    assert!(overwritten.status.success(), "{}", stderr(&overwritten));
    let (_, text) = crate::delta::commit_info(&table, 2);
    assert!(text.contains("\"partitionColumns\":[]"), "{text}");
    assert_eq!(delta_rows(&table, None).await.1, first);
    assert!(
        adds(&table, 2)
            .iter()
            .all(|add| !add["path"].as_str().unwrap().contains('='))
    );

    // a quasi-identifier cannot partition; nor can a Parquet output
    let by_lat = with(
        "lat.toml",
        &january,
        "[output]\nformat = \"delta\"\npartition_by = [\"lat\"]\n",
    );
    let refused = anonymize(&by_lat, &dir.path().join("t2"), &[]);
    let message = stderr(&refused);
    assert!(
        message.contains(
            "output.partition_by names 'lat', which is quasi_identifier: a partition column is \
             insensitive"
        ),
        "{message}"
    );
    let parquet_out = with(
        "parquet.toml",
        &january,
        "[output]\npartition_by = [\"month\"]\n",
    );
    let out = dir.path().join("plain_out");
    let refused = anonymize(&parquet_out, &out, &[]);
    let message = stderr(&refused);
    assert!(
        message.contains("output.partition_by partitions a Delta table"),
        "{message}"
    );
    assert!(!out.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_seed_gives_the_same_bytes_and_the_subject_is_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let input = trips(dir.path(), 5_000);
    let privacy = "k = 3\nmax_cell_side = 10000\nwindow = \"15m\"\nmax_window = \"4h\"\n\
                   max_suppression = 0.9\n";
    let policy = policy(dir.path(), "p.toml", &input, privacy, "");
    let (a, b) = (dir.path().join("a.parquet"), dir.path().join("b.parquet"));
    let mut reports = Vec::new();
    for out in [&a, &b] {
        let report = out.with_extension("json");
        let output = anonymize(
            &policy,
            out,
            &["--seed", "7", "--report", report.to_str().unwrap()],
        );
        assert!(output.status.success(), "{}", stderr(&output));
        let mut report: serde_json::Value = crate::read_json(&report);
        // everything but the timings and the output's name: unicity's draws included
        let object = report.as_object_mut().unwrap();
        object.remove("seconds");
        let publish = object["publish"].as_object_mut().unwrap();
        for key in ["output", "write_seconds", "verify_seconds"] {
            publish.remove(key);
        }
        reports.push(report);
    }
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert_eq!(reports[0], reports[1]);
    let ctx = SessionContext::new();
    let frame = ctx
        .read_parquet(a.to_str().unwrap(), ParquetReadOptions::default())
        .await
        .unwrap();
    let names: Vec<String> = frame
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(
        names,
        [
            "activity",
            "cell",
            "cell_min_lat",
            "cell_min_lon",
            "cell_max_lat",
            "cell_max_lon",
            "window_start",
            "window_end"
        ]
    );
}

/// A CSV of events with `rows` after the header `device_id,lat,lon,ts,activity`.
fn csv(dir: &Path, rows: &str) -> PathBuf {
    let path = dir.join("events.csv");
    std::fs::write(&path, format!("device_id,lat,lon,ts,activity\n{rows}")).unwrap();
    path
}

const GOOD_ROWS: &str = "1,48.85,2.35,2024-03-04T08:00:00,home\n\
                         2,48.85,2.35,2024-03-04T08:01:00,home\n\
                         3,48.85,2.35,2024-03-04T08:02:00,home\n";

/// Runs a policy that must fail: its one-line message, with nothing written.
fn refused(rows: &str, privacy: &str, ts_type: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let input = csv(dir.path(), rows);
    let policy = policy(dir.path(), "p.toml", &input, privacy, ts_type);
    let out = dir.path().join("out.parquet");
    let output = anonymize(&policy, &out, &[]);
    assert!(!output.status.success());
    // nothing written: the directory holds the input and the policy only
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    left.sort();
    assert_eq!(left, ["events.csv", "p.toml"]);
    let message = stderr(&output);
    assert_eq!(message.trim().lines().count(), 1, "{message}");
    message
}

const TYPED: &str = ", type = \"timestamp\"";
const SMALL: &str = "k = 2\nmax_cell_side = 3000\nwindow = \"15m\"\n";

#[test]
fn bad_input_is_refused_naming_the_column_or_row_never_the_value() {
    // row 4 (the fourth event) has latitude 91.5
    let rows = format!("{GOOD_ROWS}4,91.5,2.35,2024-03-04T08:03:00,home\n");
    let message = refused(&rows, SMALL, TYPED);
    assert!(
        message.contains("column 'lat' has a latitude outside [-90, 90] at row 4"),
        "{message}"
    );
    assert!(!message.contains("91.5"), "{message}");

    let rows = format!("{GOOD_ROWS}4,48.85,-181.25,2024-03-04T08:03:00,home\n");
    let message = refused(&rows, SMALL, TYPED);
    assert!(
        message.contains("column 'lon' has a longitude outside [-180, 180] at row 4"),
        "{message}"
    );
    assert!(!message.contains("181.25"), "{message}");

    // a NULL time (an empty field) at row 2
    let rows = "1,48.85,2.35,2024-03-04T08:00:00,home\n2,48.85,2.35,,home\n";
    let message = refused(rows, SMALL, TYPED);
    assert!(
        message.contains("column 'ts' (privacy.time) is NULL at row 2"),
        "{message}"
    );

    // a NULL position at row 3
    let rows = "1,48.85,2.35,2024-03-04T08:00:00,home\n2,48.85,2.35,2024-03-04T08:00:00,home\n\
                3,,2.35,2024-03-04T08:00:00,home\n";
    let message = refused(rows, SMALL, TYPED);
    assert!(
        message.contains("column 'lat' (privacy.latitude) is NULL at row 3"),
        "{message}"
    );

    // a time column of numbers
    let rows = "1,48.85,2.35,5,home\n2,48.85,2.35,6,home\n";
    let message = refused(rows, SMALL, "");
    assert!(
        message.contains(
            "column 'ts' (privacy.time) is Int64: the time of a cloaking must be a timestamp"
        ),
        "{message}"
    );

    // k of 1
    let message = refused(
        GOOD_ROWS,
        "k = 1\nmax_cell_side = 3000\nwindow = \"15m\"\n",
        TYPED,
    );
    assert!(
        message.contains("privacy.k = 1 protects nobody"),
        "{message}"
    );

    // a tolerance no cell can meet: 1 m with cells of at least 38 m (level 20)
    let message = refused(
        GOOD_ROWS,
        "k = 2\nmax_cell_side = 1\nmax_level = 20\nwindow = \"15m\"\n",
        TYPED,
    );
    assert!(
        message.contains("privacy.max_cell_side = 1 m is met by no cell: a level-20 cell"),
        "{message}"
    );

    // a longest window that is not the window doubled
    let message = refused(GOOD_ROWS, &format!("{SMALL}max_window = \"40m\"\n"), TYPED);
    assert!(
        message.contains("privacy.max_window must be privacy.window times a power of two"),
        "{message}"
    );

    // too many events that cannot be cloaked: 3 subjects, k = 5, no suppression allowed
    let message = refused(
        GOOD_ROWS,
        "k = 5\nmax_cell_side = 3000\nwindow = \"15m\"\n",
        TYPED,
    );
    assert!(
        message.contains(
            "3 of 3 events (100.00%) cannot be cloaked within max_cell_side and max_window"
        ),
        "{message}"
    );
    // and the hint: 3 subjects never make k = 5, whatever the tolerances (the window of 15
    // minutes, the longest, doubled to 1800 s; the side to 6000 m)
    assert!(
        message.contains(
            "would be suppressed with max_window doubled (3000 m, 1800 s) 3 (100.00%), with \
             max_cell_side doubled (6000 m, 900 s) 3 (100.00%), with both doubled (6000 m, \
             1800 s) 3 (100.00%)"
        ),
        "{message}"
    );
}

/// The unicity of pseudonyms (issue 52): with `pseudonym = true`, a release whose sampled
/// subjects are unique from 2 points of their label trace in more than half the cases is
/// warned about (stderr and the report's `warnings`); `max_unicity` refuses a release above
/// its share, before anything is written, and passes one at or below it.
#[test]
fn the_unicity_of_pseudonyms_is_warned_about_and_can_be_refused() {
    let dir = tempfile::tempdir().unwrap();
    let input = trips(dir.path(), 20_000);
    let privacy = format!("{TOLERANCES}pseudonym = true\n");
    let policy_path = policy(dir.path(), "p.toml", &input, &privacy, "");
    let out = dir.path().join("out.parquet");
    let report_path = dir.path().join("r.json");
    let report_arg = report_path.display().to_string();
    let output = anonymize(
        &policy_path,
        &out,
        &["--seed", "4", "--report", &report_arg],
    );
    assert!(output.status.success(), "{}", stderr(&output));
    let report = crate::read_json(&report_path);
    let two_points = report["unicity_release"]["unique"][1].as_f64().unwrap();
    let warned = stderr(&output).contains("with pseudonyms,");
    // the rule: a warning exactly when more than half the sampled subjects are unique
    assert_eq!(
        warned,
        two_points > 0.5,
        "{two_points}: {}",
        stderr(&output)
    );
    assert_eq!(
        report["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().starts_with("with pseudonyms,")),
        warned
    );

    // a limit below the release's share refuses it; at the share it passes
    for (share, passes) in [(two_points * 0.5, false), (two_points, true)] {
        let privacy = format!(
            "{TOLERANCES}pseudonym = true\nmax_unicity = {{ points = 2, share = {share} }}\n"
        );
        let policy_path = policy(dir.path(), "limited.toml", &input, &privacy, "");
        let limited = dir.path().join("limited.parquet");
        let output = anonymize(&policy_path, &limited, &["--seed", "4"]);
        assert_eq!(
            output.status.success(),
            passes,
            "{share}: {}",
            stderr(&output)
        );
        if !passes {
            let error = stderr(&output);
            assert!(
                error.contains("above max_unicity = { points = 2, share =")
                    && error.contains("nothing written"),
                "{error}"
            );
            assert!(!limited.exists());
        }
        let _ = std::fs::remove_file(&limited);
    }
}

/// `anon apply` publishes a fixed generalization or perturbation: a cloaking policy is sent
/// to `anon anonymize` by name (it used to be told it had no `[transformation]`), and nothing
/// is written.
#[test]
fn apply_sends_a_cloaking_policy_to_anonymize() {
    let dir = tempfile::tempdir().unwrap();
    let input = trips(dir.path(), 200);
    let policy_path = policy(dir.path(), "p.toml", &input, TOLERANCES, "");
    let out = dir.path().join("out.parquet");
    let refused = anon(&[
        "apply",
        "--policy",
        &policy_path,
        "--out",
        &out.display().to_string(),
    ]);
    assert!(!refused.status.success());
    let message = stderr(&refused);
    assert!(
        message.contains("method = \"cloaking\" is published by `anon anonymize`"),
        "{message}"
    );
    assert!(!out.exists());
}
