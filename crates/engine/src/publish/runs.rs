//! Which run made a staging: a staging name carries its run (the process id, and in a bucket
//! the host too), so that the next run to the same target removes only the staging of runs
//! that are gone ([`super::staged`], [`super::delta`]).

use std::path::Path;

use crate::storage::Location;

/// The run's part of a staging name: the process id, and in a bucket also the host, since
/// other machines may publish to the same bucket.
pub(crate) fn run_id(target: &Location) -> String {
    match target {
        Location::Local(_) => std::process::id().to_string(),
        Location::Url(_) => format!("{}-{}", host_name(), std::process::id()),
    }
}

pub(crate) fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().replace(['/', '.', '-'], "_"))
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".to_string())
}

/// Whether the process `pid` of this machine is still running.
pub(crate) fn process_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        // a leftover of this very process id (an earlier process that had it) is stale
        return false;
    }
    Path::new("/proc").is_dir() && Path::new(&format!("/proc/{pid}")).exists()
}

/// Whether the run `run` of a staging name (`<pid>`, or `<host>-<pid>` / `<host>_<pid>` in
/// a bucket) was made on this machine by a process that is gone.
#[cfg(feature = "delta")]
pub(crate) fn run_is_gone(run: &str) -> bool {
    let (host, pid) = match run.rsplit_once(['-', '_']) {
        Some((host, pid)) => (Some(host), pid),
        None => (None, run),
    };
    let Ok(pid) = pid.parse::<u32>() else {
        return false;
    };
    host.is_none_or(|h| h == host_name()) && !process_alive(pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staging_names_carry_the_run() {
        let local = Location::parse("/data/out").unwrap();
        assert_eq!(run_id(&local), std::process::id().to_string());
        let bucket = Location::parse("s3://b/out").unwrap();
        assert!(run_id(&bucket).ends_with(&format!("-{}", std::process::id())));
    }
}
