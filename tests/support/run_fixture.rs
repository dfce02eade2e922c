//! Run directories written by hand, as the supervisor would leave them: `run.json`, per-second
//! metrics and rank logs, for tests of what the dashboard reads from them.

use std::path::{Path, PathBuf};

use serde_json::json;

/// One run's directory under a store root.
pub struct FakeRun {
    pub id: String,
    pub dir: PathBuf,
}

/// What the record says.
pub struct RunFacts<'a> {
    pub id: &'a str,
    pub state: &'a str,
    pub gpus: &'a [u32],
    pub ranks: usize,
    pub started_ms: u64,
    pub ended_ms: Option<u64>,
    pub exit_code: Option<i32>,
    /// A live supervisor (this test process) for a running run.
    pub supervised: bool,
}

impl FakeRun {
    pub fn write(data_dir: &Path, facts: &RunFacts) -> FakeRun {
        let dir = data_dir.join("runs").join(facts.id);
        std::fs::create_dir_all(&dir).expect("run dir");
        let supervisor = facts.supervised.then(|| {
            let stat = std::fs::read_to_string("/proc/self/stat").expect("stat");
            let after = &stat[stat.rfind(')').expect(")") + 2..];
            let ticks: u64 = after
                .split_whitespace()
                .nth(19)
                .expect("starttime")
                .parse()
                .expect("ticks");
            json!({"pid": std::process::id(), "start_ticks": ticks})
        });
        let record = json!({
            "schema": "gpudeck.run/v1",
            "id": facts.id,
            "name": "train",
            "launcher": "per-gpu",
            "workdir": "/tmp",
            "host": "testhost",
            "gpus": facts.gpus.iter().map(|i| json!({"index": i, "uuid": format!("GPU-{i}"), "name": "H100"})).collect::<Vec<_>>(),
            "ranks": (0..facts.ranks).map(|r| json!({"rank": r, "argv": ["python", "train.py"], "env": {}, "gpus": [facts.gpus.get(r).copied().unwrap_or(0)]})).collect::<Vec<_>>(),
            "state": facts.state,
            "created_ms": facts.started_ms - 500,
            "started_ms": facts.started_ms,
            "ended_ms": facts.ended_ms,
            "supervisor": supervisor,
            "exit_code": facts.exit_code,
        });
        std::fs::write(dir.join("run.json"), record.to_string()).expect("run.json");
        FakeRun {
            id: facts.id.to_string(),
            dir,
        }
    }

    /// Appends metrics rows (`t_ms`, gpu, util%, memory used GiB, power W), header first.
    pub fn metrics(&self, rows: &[(u64, u32, u32, u64, f64)]) {
        let path = self.dir.join("metrics.csv");
        let mut text = String::new();
        if !path.exists() {
            text.push_str("t_unix_ms,gpu_index,gpu_uuid,util_pct,mem_used_bytes,mem_total_bytes,power_w,temp_c,sm_clock_mhz\n");
        }
        for (t, gpu, util, mem_gib, power) in rows {
            text.push_str(&format!(
                "{t},{gpu},GPU-{gpu},{util},{},{},{power},50,1980\n",
                mem_gib << 30,
                80u64 << 30
            ));
        }
        append(&path, &text);
    }

    pub fn log(&self, rank: usize, stream: &str, text: &str) {
        append(&self.dir.join(format!("rank-{rank}.{stream}.log")), text);
    }
}

fn append(path: &Path, text: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open");
    f.write_all(text.as_bytes()).expect("write");
}
