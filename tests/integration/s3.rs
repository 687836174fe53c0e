//! Object storage against a real S3-compatible server: `s3s-fs`, started in this process on
//! 127.0.0.1 with access-key authentication, serving a temporary directory (bucket `b` is the
//! directory `<root>/b`, object `b/k` the file `<root>/b/k`). `anon` runs as a child process
//! with the standard `AWS_*` variables pointing at it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;

use super::stderr;

const ACCESS_KEY: &str = "anon-test-access";
const SECRET_KEY: &str = "anon-test-secret-7Qx9";

/// A running S3-compatible server; stops with the test process.
struct S3Server {
    endpoint: String,
    root: tempfile::TempDir,
}

impl S3Server {
    fn start() -> Self {
        let root = tempfile::tempdir().unwrap();
        let fs = s3s_fs::FileSystem::new(root.path()).unwrap();
        let mut builder = S3ServiceBuilder::new(fs);
        builder.set_auth(SimpleAuth::from_single(ACCESS_KEY, SECRET_KEY));
        let service = builder.build();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                let http = ConnBuilder::new(TokioExecutor::new());
                loop {
                    let Ok((socket, _)) = listener.accept().await else {
                        continue;
                    };
                    let connection = http
                        .serve_connection(TokioIo::new(socket), service.clone())
                        .into_owned();
                    tokio::spawn(async move {
                        let _ = connection.await;
                    });
                }
            });
        });
        Self { endpoint, root }
    }

    /// Creates bucket `name` and returns its directory.
    fn bucket(&self, name: &str) -> PathBuf {
        let path = self.root.path().join(name);
        std::fs::create_dir_all(&path).unwrap();
        path
    }

    /// `anon` with the environment of a user of this server.
    fn command(&self, args: &[&str]) -> Command {
        self.command_with_secret(args, SECRET_KEY)
    }

    fn command_with_secret(&self, args: &[&str], secret: &str) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_anon"));
        command
            .args(args)
            .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
            .env("AWS_SECRET_ACCESS_KEY", secret)
            .env("AWS_ENDPOINT_URL", &self.endpoint)
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ALLOW_HTTP", "true")
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("AWS_PROFILE");
        command
    }

    fn anon(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }
}

/// Every file under `dir`, relative to it, sorted; skips s3s-fs's own metadata files.
fn files_under(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&current) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let relative = path.strip_prefix(dir).unwrap().display().to_string();
                found.push(relative);
            }
        }
    }
    found.sort();
    found
}

/// The patients table of `anon generate` (`rows` rows) as `<bucket>/in/patients.parquet`.
fn upload_patients(bucket: &Path, rows: usize) {
    let local = tempfile::tempdir().unwrap();
    let file = local.path().join("patients.parquet");
    super::generate_patients(&file, rows, 11);
    std::fs::create_dir_all(bucket.join("in")).unwrap();
    std::fs::copy(&file, bucket.join("in/patients.parquet")).unwrap();
}

/// A k = 5 policy over the bucket's patients at zip level 3, age level 2.
fn patients_policy(dir: &Path, input: &str, max_suppression: f64) -> String {
    let path = dir.join("policy.toml");
    std::fs::write(
        &path,
        super::patients_policy(input, 5, max_suppression, 3, 2),
    )
    .unwrap();
    path.display().to_string()
}

/// The single value `anon sql --format csv` prints for `query` over `table=url`.
fn sql_value(server: &S3Server, table: &str, url: &str, query: &str) -> String {
    let output = server.anon(&[
        "sql",
        "--table",
        &format!("{table}={url}"),
        "--format",
        "csv",
        query,
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    text.lines().nth(1).unwrap_or_default().trim().to_string()
}

#[test]
fn sql_reads_parquet_under_a_prefix() {
    let server = S3Server::start();
    let bucket = server.bucket("lake");
    // two files under one prefix: 3 + 2 rows
    let local = tempfile::tempdir().unwrap();
    for (name, rows) in [("a", "(1),(2),(3)"), ("b", "(4),(5)")] {
        let out = local.path().join(format!("{name}.parquet"));
        let made = super::anon(&[
            "sql",
            &format!(
                "COPY (SELECT column1 AS x FROM (VALUES {rows})) TO '{}' STORED AS PARQUET",
                out.display()
            ),
        ]);
        assert!(made.status.success(), "{}", stderr(&made));
        std::fs::create_dir_all(bucket.join("t")).unwrap();
        std::fs::copy(&out, bucket.join(format!("t/{name}.parquet"))).unwrap();
    }
    // 1 + 2 + 3 + 4 + 5 = 15 over 5 rows
    assert_eq!(
        sql_value(
            &server,
            "t",
            "s3://lake/t/",
            "SELECT count(*) AS n, sum(x) AS s FROM t"
        ),
        "5,15"
    );
    // without the trailing slash, and a glob
    assert_eq!(
        sql_value(&server, "t", "s3://lake/t", "SELECT sum(x) FROM t"),
        "15"
    );
    assert_eq!(
        sql_value(
            &server,
            "t",
            "s3://lake/t/a*.parquet",
            "SELECT sum(x) FROM t"
        ),
        "6"
    );
}

#[test]
fn sql_reads_a_csv_object_without_losing_leading_zeros() {
    let server = S3Server::start();
    let bucket = server.bucket("lake");
    std::fs::create_dir_all(bucket.join("c")).unwrap();
    // a note spanning two lines, ZIP codes with leading zeros
    std::fs::write(
        bucket.join("c/people.csv"),
        "zip,n,note\n02134,1,\"a\nb\"\n10001,2,c\n00501,3,d\n",
    )
    .unwrap();
    assert_eq!(
        sql_value(
            &server,
            "t",
            "s3://lake/c/people.csv",
            "SELECT count(*), sum(n), min(zip), arrow_typeof(min(zip)) FROM t"
        ),
        "3,6,00501,Utf8"
    );
}

/// CSV files under a prefix, read as one table (each file's header skipped, ZIP codes kept
/// as text); a glob of CSV objects is refused with a message saying why.
#[test]
fn sql_reads_csv_files_under_a_prefix_and_refuses_a_csv_glob() {
    let server = S3Server::start();
    let bucket = server.bucket("lake");
    std::fs::create_dir_all(bucket.join("c2")).unwrap();
    std::fs::write(bucket.join("c2/a.csv"), "zip,n\n02134,1\n").unwrap();
    std::fs::write(bucket.join("c2/b.csv"), "zip,n\n00501,2\n10001,3\n").unwrap();
    // 1 + 2 + 3 over 3 rows
    assert_eq!(
        sql_value(
            &server,
            "t",
            "s3://lake/c2/",
            "SELECT count(*), sum(n), min(zip) FROM t"
        ),
        "3,6,00501"
    );
    assert_eq!(
        sql_value(&server, "t", "s3://lake/c2", "SELECT sum(n) FROM t"),
        "6"
    );
    let glob = server.anon(&[
        "sql",
        "--table",
        "t=s3://lake/c2/b*.csv",
        "SELECT sum(n) FROM t",
    ]);
    assert!(!glob.status.success());
    assert!(
        stderr(&glob).contains("a glob must match Parquet files"),
        "{}",
        stderr(&glob)
    );
}

#[test]
fn anonymize_from_a_bucket_to_a_bucket_is_verified_and_complete() {
    let server = S3Server::start();
    let bucket = server.bucket("lake");
    upload_patients(&bucket, 20_000);
    let local = tempfile::tempdir().unwrap();
    let policy = patients_policy(local.path(), "s3://lake/in/patients.parquet", 0.2);
    let output = server.anon(&["apply", "--policy", &policy, "--out", "s3://lake/out"]);
    assert!(output.status.success(), "{}", stderr(&output));
    // the manifest lists exactly the data files under the prefix
    let files = files_under(&bucket.join("out"));
    assert!(files.contains(&"_SUCCESS".to_string()), "{files:?}");
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(bucket.join("out/_SUCCESS")).unwrap()).unwrap();
    let mut listed: Vec<String> = manifest["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap().to_string())
        .collect();
    listed.push("_SUCCESS".into());
    listed.sort();
    let data_files: Vec<String> = files
        .iter()
        .filter(|f| f.ends_with(".parquet") || *f == "_SUCCESS")
        .cloned()
        .collect();
    assert_eq!(data_files, listed);
    // no staging is left beside it
    let staging: Vec<String> = files_under(&bucket)
        .into_iter()
        .filter(|f| f.contains("anon-tmp"))
        .collect();
    assert!(staging.is_empty(), "{staging:?}");
    // read back from the bucket: every class has at least k = 5 rows, and the rows are those
    // the local run of the same policy publishes
    let smallest = sql_value(
        &server,
        "o",
        "s3://lake/out/",
        "SELECT min(n) FROM (SELECT count(*) AS n FROM o GROUP BY zip, age, sex)",
    );
    assert!(smallest.parse::<i64>().unwrap() >= 5, "{smallest}");
    let local_input = local.path().join("patients.parquet");
    std::fs::copy(bucket.join("in/patients.parquet"), &local_input).unwrap();
    let local_policy = patients_policy(local.path(), "patients.parquet", 0.2);
    let local_out = local.path().join("out.parquet");
    let local_run = super::anon(&[
        "apply",
        "--policy",
        &local_policy,
        "--out",
        &local_out.display().to_string(),
    ]);
    assert!(local_run.status.success(), "{}", stderr(&local_run));
    // every published row, in a canonical order, hashed
    let fingerprint = "SELECT count(*) || ':' || md5(string_agg(r, ',' ORDER BY r)) FROM \
                       (SELECT concat_ws('|', zip, age, sex, disease) AS r FROM o)";
    assert_eq!(
        sql_value(&server, "o", "s3://lake/out/", fingerprint),
        sql_value(&server, "o", &local_out.display().to_string(), fingerprint),
    );
}

#[test]
fn a_policy_that_fails_writes_nothing_to_the_bucket() {
    let server = S3Server::start();
    let bucket = server.bucket("lake");
    upload_patients(&bucket, 2_000);
    let local = tempfile::tempdir().unwrap();
    // k = 5 at zip level 3 on 2,000 rows leaves small classes; no suppression is allowed
    let policy = patients_policy(local.path(), "s3://lake/in/patients.parquet", 0.0);
    let before = files_under(&bucket);
    let output = server.anon(&["apply", "--policy", &policy, "--out", "s3://lake/out/"]);
    assert!(!output.status.success());
    let error = stderr(&output);
    assert!(error.contains("nothing written"), "{error}");
    assert_eq!(files_under(&bucket), before, "the bucket changed");
}

/// Waits until a file whose path contains `marker` appears under `dir` while `child` runs;
/// returns whether it did before `child` ended.
fn wait_for_staging(dir: &Path, marker: &str, child: &mut std::process::Child) -> bool {
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        if files_under(dir)
            .iter()
            .any(|f| f.contains(marker) && f.ends_with(".parquet"))
        {
            return true;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    false
}

#[test]
fn a_run_killed_while_staging_leaves_the_bucket_output_as_it_was() {
    use std::os::unix::process::ExitStatusExt;
    let server = S3Server::start();
    let bucket = server.bucket("lake");
    upload_patients(&bucket, 300_000);
    let local = tempfile::tempdir().unwrap();
    let policy = patients_policy(local.path(), "s3://lake/in/patients.parquet", 0.05);
    let first = server.anon(&["apply", "--policy", &policy, "--out", "s3://lake/out/"]);
    assert!(first.status.success(), "{}", stderr(&first));
    let rows = sql_value(&server, "o", "s3://lake/out/", "SELECT count(*) FROM o");

    // the same publish with --overwrite, killed once its staging holds data; a run that ends
    // before the poll sees its staging (a busy machine) is repeated
    let overwrite = [
        "apply",
        "--policy",
        &policy,
        "--out",
        "s3://lake/out/",
        "--overwrite",
    ];
    let mut caught = false;
    for _ in 0..5 {
        let published = files_under(&bucket.join("out"));
        let manifest = std::fs::read(bucket.join("out/_SUCCESS")).unwrap();
        let mut child = server
            .command(&overwrite)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let staged = wait_for_staging(&bucket, ".out.anon-tmp-", &mut child);
        let _ = child.kill(); // SIGKILL: no chance to clean up
        let status = child.wait().unwrap();
        if !staged {
            assert!(status.success(), "the run failed: {status}");
            continue;
        }
        assert_eq!(status.signal(), Some(9), "the run was not killed mid-way");
        // the staging is there; the output is untouched
        assert!(
            files_under(&bucket)
                .iter()
                .any(|f| f.contains(".out.anon-tmp-"))
        );
        assert_eq!(files_under(&bucket.join("out")), published);
        assert_eq!(
            std::fs::read(bucket.join("out/_SUCCESS")).unwrap(),
            manifest
        );
        assert_eq!(
            sql_value(&server, "o", "s3://lake/out/", "SELECT count(*) FROM o"),
            rows
        );
        caught = true;
        break;
    }
    assert!(caught, "no run was caught while its staging held data");

    // the next run removes the stale staging, says so, and publishes
    let next = server.anon(&[
        "apply",
        "--policy",
        &policy,
        "--out",
        "s3://lake/out/",
        "--overwrite",
    ]);
    assert!(next.status.success(), "{}", stderr(&next));
    assert!(
        stderr(&next).contains("removed s3://lake/.out.anon-tmp-"),
        "{}",
        stderr(&next)
    );
    assert!(!files_under(&bucket).iter().any(|f| f.contains("anon-tmp")));
    assert_eq!(
        sql_value(&server, "o", "s3://lake/out/", "SELECT count(*) FROM o"),
        rows
    );
}

#[test]
fn wrong_credentials_and_a_missing_bucket_name_the_url_and_no_secret() {
    let server = S3Server::start();
    let bucket = server.bucket("lake");
    upload_patients(&bucket, 100);
    let wrong_secret = "not-the-secret-Zz81";
    let output = server
        .command_with_secret(
            &[
                "sql",
                "--table",
                "t=s3://lake/in/patients.parquet",
                "SELECT count(*) FROM t",
            ],
            wrong_secret,
        )
        .output()
        .unwrap();
    assert!(!output.status.success());
    let error = stderr(&output);
    assert_eq!(error.trim().lines().count(), 1, "{error}");
    assert!(error.contains("s3://lake/in/patients.parquet"), "{error}");
    assert!(error.contains("credentials"), "{error}");
    assert!(
        !error.contains(wrong_secret) && !error.contains(ACCESS_KEY),
        "{error}"
    );

    let output = server.anon(&["sql", "--table", "t=s3://nowhere/x.parquet", "SELECT 1"]);
    assert!(!output.status.success());
    let error = stderr(&output);
    assert_eq!(error.trim().lines().count(), 1, "{error}");
    assert!(error.contains("s3://nowhere/x.parquet"), "{error}");
    assert!(!error.contains(SECRET_KEY), "{error}");

    // an output in a missing bucket: named as given, not as the Delta log looked for under it
    let local = tempfile::tempdir().unwrap();
    let policy = patients_policy(local.path(), "s3://lake/in/patients.parquet", 0.2);
    let output = server.anon(&["apply", "--policy", &policy, "--out", "s3://nowhere/rel/"]);
    assert!(!output.status.success());
    let error = stderr(&output);
    assert_eq!(error.trim().lines().count(), 1, "{error}");
    assert!(error.contains("s3://nowhere/rel"), "{error}");
    assert!(error.contains("bucket does not exist"), "{error}");
    assert!(!error.contains("_delta_log"), "{error}");
}

#[test]
fn profile_reads_a_bucket() {
    let server = S3Server::start();
    let bucket = server.bucket("lake");
    upload_patients(&bucket, 2_000);
    let output = server.anon(&[
        "profile",
        "s3://lake/in/patients.parquet",
        "--qi",
        "sex",
        "--format",
        "json",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    // sex alone: two classes over 2,000 rows
    assert_eq!(report["anonymity"]["classes"], 2, "{report}");
    assert_eq!(report["rows"], 2000, "{report}");
}

/// An endpoint nothing listens on (a port just closed): one error line naming the endpoint
/// (scheme, host and port: no credential, no path) and saying it is unreachable, once, after
/// the few connection attempts of `storage::CONNECT_ATTEMPTS` rather than the client's 10
/// retries; no secret and no client text.
#[test]
fn an_unreachable_endpoint_is_named_once() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let endpoint = format!("http://127.0.0.1:{port}");
    let output = Command::new(env!("CARGO_BIN_EXE_anon"))
        .args([
            "sql",
            "--table",
            "t=s3://lake/in/patients.parquet",
            "SELECT count(*) FROM t",
        ])
        .env("AWS_ACCESS_KEY_ID", ACCESS_KEY)
        .env("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
        .env("AWS_ENDPOINT_URL", &endpoint)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ALLOW_HTTP", "true")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_PROFILE")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let error = stderr(&output);
    assert_eq!(error.trim().lines().count(), 1, "{error}");
    assert!(
        error.contains(&format!(
            "the object store endpoint {endpoint} is unreachable (connection refused, {} \
             attempts)",
            datafusion_anonymity_engine::storage::CONNECT_ATTEMPTS
        )),
        "{error}"
    );
    assert_eq!(error.matches("unreachable").count(), 1, "{error}");
    assert!(error.contains("s3://lake/in/patients.parquet"), "{error}");
    for raw in [
        "Error performing",
        "retries",
        "error sending request",
        SECRET_KEY,
        ACCESS_KEY,
    ] {
        assert!(!error.contains(raw), "{raw}: {error}");
    }
}

/// A release published as a Delta table in a bucket: one commit, read back by delta-rs from the
/// server's files and by `anon sql` over S3; a new version with `--overwrite`; with conditional
/// put disabled, a commit is refused (an atomic Delta commit needs it) and nothing is committed
/// or left behind; a Delta input in the bucket is read at its pinned version.
#[test]
fn a_delta_table_in_a_bucket_commits_once_per_release() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let server = S3Server::start();
    let bucket = server.bucket("lake");
    upload_patients(&bucket, 2_000);
    let local = tempfile::tempdir().unwrap();
    let policy = patients_policy(local.path(), "s3://lake/in/patients.parquet", 1.0);
    let table = bucket.join("rel");
    let report = local.path().join("report.json");
    let run = server.anon(&[
        "anonymize",
        "--policy",
        &policy,
        "--out",
        "s3://lake/rel",
        "--format",
        "delta",
        "--seed",
        "3",
        "--report",
        &report.display().to_string(),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(super::delta::commits(&table), ["00000000000000000000.json"]);
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let rows = report["publish"]["verification"]["rows"].as_u64().unwrap();
    let (version, read) = runtime.block_on(super::delta::delta_rows(&table, None));
    assert_eq!((version, read.len() as u64), (0, rows));
    // anon reads the table over S3, detected by its _delta_log
    assert_eq!(
        sql_value(&server, "t", "s3://lake/rel", "SELECT count(*) FROM t"),
        rows.to_string()
    );
    let (info, _) = super::delta::commit_info(&table, 0);
    assert_eq!(info["anonymity"]["figures"]["rows"], rows);

    let overwrite = [
        "apply",
        "--policy",
        policy.as_str(),
        "--out",
        "s3://lake/rel",
        "--overwrite",
    ];
    let run = server.anon(&overwrite);
    assert!(run.status.success(), "{}", stderr(&run));
    assert_eq!(super::delta::commits(&table).len(), 2);
    // s3s-fs keeps a prefix's directory when its objects are deleted: count the files
    let data_files = || {
        files_under(&table)
            .into_iter()
            .filter(|f| f.ends_with(".parquet"))
            .collect::<Vec<_>>()
    };
    let files = data_files();

    // no conditional put: refused at the commit, nothing committed, the files removed
    let refused = server
        .command(&overwrite)
        .env("AWS_CONDITIONAL_PUT", "disabled")
        .output()
        .unwrap();
    assert!(!refused.status.success());
    let message = stderr(&refused);
    assert!(
        message.contains(
            "Delta table s3://lake/rel: the object store cannot create a file only if it is absent"
        ),
        "{message}"
    );
    assert_eq!(super::delta::commits(&table).len(), 2);
    assert_eq!(data_files(), files);

    // a Delta input in the bucket, at a pinned version
    let pinned = local.path().join("pinned.toml");
    std::fs::write(
        &pinned,
        super::patients_policy("s3://lake/raw", 5, 1.0, 3, 2).replacen(
            "path = \"s3://lake/raw\"",
            "path = \"s3://lake/raw\"\nversion = 0",
            1,
        ),
    )
    .unwrap();
    runtime.block_on(super::delta::write_input(
        &bucket.join("raw"),
        &bucket.join("in/patients.parquet"),
    ));
    let report = local.path().join("pinned.json");
    let run = server.anon(&[
        "anonymize",
        "--policy",
        &pinned.display().to_string(),
        "--out",
        "s3://lake/from_delta.parquet",
        "--report",
        &report.display().to_string(),
    ]);
    assert!(run.status.success(), "{}", stderr(&run));
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(report["input_version"], 0);
    assert_eq!(report["publish"]["input_rows"], 2_000);
}

/// `anon hierarchy build` into a bucket: a file of more leaves than the builder reads back
/// (10,000) is streamed to an upload completed only once its rules passed, and appears whole;
/// one that breaks a rule leaves the bucket as it was.
#[test]
fn a_hierarchy_built_into_a_bucket_appears_whole_or_not_at_all() {
    let server = S3Server::start();
    let bucket = server.bucket("lake");
    let local = tempfile::tempdir().unwrap();
    let ids = local.path().join("ids.csv");
    let mut text = String::from("id\n");
    for id in 1..=12_000 {
        text.push_str(&format!("{id}\n"));
    }
    std::fs::write(&ids, text).unwrap();
    let output = server.anon(&[
        "hierarchy",
        "build",
        "--table",
        ids.to_str().unwrap(),
        "--column",
        "id",
        "--out",
        "s3://lake/h/id.csv",
        "--kind",
        "interval",
        "--widths",
        "1000",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let written = std::fs::read_to_string(bucket.join("h/id.csv")).unwrap();
    let lines: Vec<&str> = written.lines().collect();
    // by hand: one line per id, in order; 1000 is in [1000, 2000)
    assert_eq!(lines.len(), 12_000);
    assert_eq!(lines[999], "1000;[1000, 2000);*");
    assert_eq!(lines[11_999], "12000;[12000, 13000);*");

    let before = files_under(&bucket);
    let table = local.path().join("c.csv");
    std::fs::write(&table, super::hierarchy::colliding_categories(10_000)).unwrap();
    let output = server.anon(&[
        "hierarchy",
        "build",
        "--table",
        table.to_str().unwrap(),
        "--column",
        "c",
        "--out",
        "s3://lake/h/c.csv",
        "--kind",
        "category",
        "--min-size",
        "3,8",
    ]);
    assert!(!output.status.success());
    let error = stderr(&output);
    assert!(
        error.contains("line 10006, level 1") && error.contains("[rule: one parent]"),
        "{error}"
    );
    assert_eq!(files_under(&bucket), before, "the bucket changed");
}

/// Every object of `server`, as `bucket/key`: the files under its bucket directories
/// (s3s-fs keeps its own metadata and partial uploads as dot files beside them, at the root).
fn objects_of(server: &S3Server) -> Vec<String> {
    files_under(server.root.path())
        .into_iter()
        .filter(|f| !f.starts_with('.'))
        .collect()
}

/// The generated trips table (`rows` events) and the CASC Census set as objects of `bucket`.
fn upload_trips_and_census(bucket: &Path, rows: usize) {
    let local = tempfile::tempdir().unwrap();
    let trips = super::cloaking::trips(local.path(), rows);
    std::fs::copy(&trips, bucket.join("in/trips.parquet")).unwrap();
    let census = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/casc/census.csv");
    std::fs::copy(census, bucket.join("in/census.csv")).unwrap();
}

/// The policies of one run of each method over `s3://raw/in/`, each with `storage` (a
/// `[storage]` section, or nothing) appended: generalization, cloaking, perturbation.
fn policies_of_every_method(dir: &Path, storage: &str) -> [String; 3] {
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, format!("{text}{storage}")).unwrap();
        path.display().to_string()
    };
    let generalization = write(
        "generalization.toml",
        super::patients_policy("s3://raw/in/patients.parquet", 5, 0.2, 3, 2),
    );
    let cloaking = write(
        "cloaking.toml",
        "[input]\npath = \"s3://raw/in/trips.parquet\"\n[privacy]\nmethod = \"cloaking\"\n\
         person = \"device_id\"\nlatitude = \"lat\"\nlongitude = \"lon\"\ntime = \"ts\"\nk = 5\n\
         max_cell_side = 3000\nwindow = \"15m\"\nmax_window = \"2h\"\nmax_suppression = 0.5\n\
         [attributes]\ndevice_id = { role = \"identifier\" }\n\
         lat = { role = \"quasi_identifier\" }\nlon = { role = \"quasi_identifier\" }\n\
         ts = { role = \"quasi_identifier\" }\nactivity = { role = \"insensitive\" }\n"
            .to_string(),
    );
    let census = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/casc/census.csv"),
    )
    .unwrap();
    let mut perturbation = "[input]\npath = \"s3://raw/in/census.csv\"\n[privacy]\n\
                            method = \"perturbation\"\nk = 3\n[attributes]\n"
        .to_string();
    for column in census.lines().next().unwrap().split(',') {
        perturbation.push_str(&format!(
            "\"{column}\" = {{ role = \"quasi_identifier\", perturbation = {{ kind = \
             \"microaggregation\" }} }}\n"
        ));
    }
    let perturbation = write("perturbation.toml", perturbation);
    [generalization, cloaking, perturbation]
}

/// The runs of [`policies_of_every_method`]: each method to a Parquet prefix with a JSON
/// report, generalization also to a single Parquet object with an HTML report and to a Delta
/// table, and cloaking and perturbation to Delta tables; the objects each must leave.
fn runs_of_every_method(policies: &[String; 3]) -> Vec<(Vec<String>, Vec<&'static str>)> {
    let [generalization, cloaking, perturbation] = policies;
    let run = |policy: &String, rest: &[&str]| {
        let mut args = vec!["anonymize", "--quiet", "--seed", "3", "--policy", policy];
        args.extend_from_slice(rest);
        args.into_iter().map(str::to_string).collect::<Vec<_>>()
    };
    vec![
        (
            run(
                generalization,
                &["--out", "s3://lake/g/", "--report", "s3://lake/g.json"],
            ),
            vec!["lake/g/_SUCCESS", "lake/g.json"],
        ),
        (
            run(
                generalization,
                &[
                    "--out",
                    "s3://lake/g1.parquet",
                    "--html-report",
                    "s3://lake/g1.html",
                ],
            ),
            vec!["lake/g1.parquet", "lake/g1.html"],
        ),
        (
            run(
                generalization,
                &["--out", "s3://lake/gd", "--format", "delta"],
            ),
            vec!["lake/gd/_delta_log/00000000000000000000.json"],
        ),
        (
            run(
                cloaking,
                &["--out", "s3://lake/c/", "--report", "s3://lake/c.json"],
            ),
            vec!["lake/c/_SUCCESS", "lake/c.json"],
        ),
        (
            run(cloaking, &["--out", "s3://lake/cd", "--format", "delta"]),
            vec!["lake/cd/_delta_log/00000000000000000000.json"],
        ),
        (
            run(
                perturbation,
                &["--out", "s3://lake/p/", "--report", "s3://lake/p.json"],
            ),
            vec!["lake/p/_SUCCESS", "lake/p.json"],
        ),
        (
            run(
                perturbation,
                &["--out", "s3://lake/pd", "--format", "delta"],
            ),
            vec!["lake/pd/_delta_log/00000000000000000000.json"],
        ),
    ]
}

/// Every file a `_SUCCESS` manifest of `server` lists is an object of `server` (a manifest
/// that lists files held elsewhere is the defect this guards against).
fn manifests_hold_their_files(server: &S3Server, objects: &[String]) {
    for manifest in objects.iter().filter(|o| o.ends_with("/_SUCCESS")) {
        let prefix = manifest.trim_end_matches("_SUCCESS");
        let text = std::fs::read(server.root.path().join(manifest)).unwrap();
        let listed: serde_json::Value = serde_json::from_slice(&text).unwrap();
        let files = listed["files"].as_array().unwrap();
        assert!(!files.is_empty(), "{manifest}");
        for file in files {
            let object = format!("{prefix}{}", file.as_str().unwrap());
            assert!(
                objects.contains(&object),
                "{manifest} lists {object}: {objects:?}"
            );
        }
    }
}

/// Issue 52's first defect: the policy's `[storage] endpoint` names server A, the environment
/// (`AWS_ENDPOINT_URL`) another server B that has a bucket of the same name. Every object of
/// every method's run (the data files, the staging while it lasts, the manifest, the Delta
/// log, the reports) must be on A and none on B; a run that wrote its files to B and its
/// manifest to A exited 0 before the fix. Without `AWS_ENDPOINT_URL` at all the run goes to A
/// as well (before the fix: to AWS itself). And a policy without `[storage]` goes wherever the
/// environment says, here B, leaving A as it was.
#[test]
fn every_object_of_a_run_goes_to_the_store_the_policy_names() {
    let policy_server = S3Server::start();
    let env_server = S3Server::start();
    // the inputs in one bucket, the outputs in another: a store bound for the input's bucket
    // must not carry the output's writes by chance
    let raw = policy_server.bucket("raw");
    policy_server.bucket("lake");
    env_server.bucket("lake");
    upload_patients(&raw, 20_000);
    upload_trips_and_census(&raw, 20_000);
    let inputs = objects_of(&policy_server);
    let local = tempfile::tempdir().unwrap();
    let storage = format!(
        "[storage]\nendpoint = \"{}\"\nallow_http = true\n",
        policy_server.endpoint
    );
    let policies = policies_of_every_method(local.path(), &storage);
    let mut expected = inputs.clone();
    for (args, leaves) in runs_of_every_method(&policies) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let output = env_server.anon(&args);
        assert!(output.status.success(), "{args:?}: {}", stderr(&output));
        assert!(
            objects_of(&env_server).is_empty(),
            "{args:?} wrote to the environment's server: {:?}",
            objects_of(&env_server)
        );
        expected.extend(leaves.iter().map(|l| l.to_string()));
    }
    let on_a = objects_of(&policy_server);
    for object in &expected {
        assert!(on_a.contains(object), "{object} is not on A: {on_a:?}");
    }
    assert!(
        !on_a.iter().any(|o| o.contains("anon-tmp")),
        "staging left behind: {on_a:?}"
    );
    manifests_hold_their_files(&policy_server, &on_a);
    // every Delta table's files are on A too, and read back through A
    for (table, rows) in [("gd", None), ("cd", None), ("pd", Some("1080"))] {
        let count = sql_value(
            &policy_server,
            "t",
            &format!("s3://lake/{table}"),
            "SELECT count(*) FROM t",
        );
        assert!(count.parse::<u64>().unwrap() > 0, "{table}: {count}");
        if let Some(rows) = rows {
            assert_eq!(count, rows, "{table}");
        }
    }

    // a partitioned Delta release (`[output] partition_by`): its partition directories are on
    // A too, none on B, no staging left; read back through A, it holds the rows of the
    // unpartitioned table of the same seed
    let partitioned = local.path().join("partitioned.toml");
    let mut text = std::fs::read_to_string(&policies[1]).unwrap();
    text.push_str("[output]\nformat = \"delta\"\npartition_by = [\"activity\"]\n");
    std::fs::write(&partitioned, text).unwrap();
    let partitioned = partitioned.display().to_string();
    let output = env_server.anon(&[
        "anonymize",
        "--quiet",
        "--seed",
        "3",
        "--policy",
        &partitioned,
        "--out",
        "s3://lake/cp",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        objects_of(&env_server).is_empty(),
        "{:?}",
        objects_of(&env_server)
    );
    let on_a = objects_of(&policy_server);
    assert!(on_a.contains(&"lake/cp/_delta_log/00000000000000000000.json".to_string()));
    let files: Vec<&String> = on_a
        .iter()
        .filter(|o| o.starts_with("lake/cp/anon-"))
        .collect();
    // every data file in a partition directory: the verified, unpartitioned staging is gone
    assert!(
        !files.is_empty() && files.iter().all(|o| o.contains("/activity=")),
        "{files:?}"
    );
    assert!(!on_a.iter().any(|o| o.contains("anon-tmp")), "{on_a:?}");
    let count = |table: &str| {
        sql_value(
            &policy_server,
            "t",
            &format!("s3://lake/{table}"),
            "SELECT count(*) FROM t",
        )
    };
    assert_eq!(count("cp"), count("cd"));

    // no AWS_ENDPOINT_URL at all: the policy's server still, not AWS
    let output = env_server
        .command(&[
            "anonymize",
            "--quiet",
            "--policy",
            &policies[0],
            "--out",
            "s3://lake/no-env/",
        ])
        .env_remove("AWS_ENDPOINT_URL")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(objects_of(&policy_server).contains(&"lake/no-env/_SUCCESS".to_string()));
    assert!(objects_of(&env_server).is_empty());

    // a policy without [storage]: the environment's server, and nothing on the other
    let env_raw = env_server.bucket("raw");
    std::fs::create_dir_all(env_raw.join("in")).unwrap();
    std::fs::copy(
        raw.join("in/patients.parquet"),
        env_raw.join("in/patients.parquet"),
    )
    .unwrap();
    let before_on_a = objects_of(&policy_server);
    let plain = policies_of_every_method(local.path(), "");
    let output = env_server.anon(&[
        "anonymize",
        "--quiet",
        "--policy",
        &plain[0],
        "--out",
        "s3://lake/env/",
        "--report",
        "s3://lake/env.json",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(objects_of(&policy_server), before_on_a);
    let on_b = objects_of(&env_server);
    for object in ["lake/env/_SUCCESS", "lake/env.json"] {
        assert!(on_b.contains(&object.to_string()), "{on_b:?}");
    }
    assert!(!on_b.iter().any(|o| o.contains("anon-tmp")), "{on_b:?}");
    manifests_hold_their_files(&env_server, &on_b);
}
