//! End to end: a training run started from the command line, watched, read and stopped in the
//! Runs tab of gpudeck in tmux, as a user would.

use crate::support;

use support::runs::start;
use support::tmux::Session;
use support::Dirs;

/// Two ranks printing progress every 0.1 s until stopped; rank 1 also warns on stderr.
const TRAIN: &str = "i=0; while true; do i=$((i+1)); echo \"step=$i loss=0.$((1000 - i % 1000)) lr=0.001 rank=$RANK\"; \
                     [ $RANK = 1 ] && echo \"rank 1 warning $i\" >&2; sleep 0.1; done";

#[test]
fn a_user_watches_a_run_reads_each_rank_and_stops_it() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let (id, _guard) = start(
        &dirs,
        &[
            "--name",
            "e2e",
            "--gpus",
            "0,1",
            "--launcher",
            "per-gpu",
            "--",
            "sh",
            "-c",
            TRAIN,
        ],
    );
    let data = dirs.root.path().to_path_buf();
    let s = Session::start_with("runs", 100, 32, "", "--demo", dirs);
    s.wait_for("the dashboard", |t| t.contains("DEMO"));
    s.keys(&["8"]);
    let screen = s.wait_for("the run, running, with its progress", |t| {
        t.contains(&id) && t.contains("running") && t.contains("Progress: step")
    });
    assert!(screen.contains("per-gpu"), "{screen}");
    s.wait_for("rank 0's output under the detail", |t| {
        t.contains("rank=0") && t.contains("rank 0 output")
    });

    s.keys(&["Enter"]);
    s.wait_for("the whole log of rank 0", |t| {
        t.contains(&format!("Logs · {id} · rank 0")) && t.contains("following")
    });
    s.keys(&["]"]);
    s.wait_for("rank 1's stdout and stderr", |t| {
        t.contains("· rank 1") && t.contains("rank=1") && t.contains("E rank 1 warning")
    });
    s.keys(&["/"]);
    s.keys(&["w", "a", "r", "n", "Enter"]);
    s.wait_for("a search", |t| {
        t.contains("search: warn") && t.contains("lines up")
    });
    s.keys(&["Escape"]);
    s.wait_for("back on the list", |t| t.contains("Runs · 1 · 1 running"));

    s.keys(&["x"]);
    s.wait_for("a confirmation", |t| t.contains(&format!("Stop {id}?")));
    s.keys(&["y"]);
    s.wait_for_secs("the run stopped", 30, |t| {
        t.contains("Runs · 1 · 0 running") && t.contains("stopped") && t.contains("exit 130")
    });
    let record_dirs = DirsAt(data);
    assert_eq!(record_dirs.state(&id), "stopped");

    // Again, with the same spec: a new run, selected, running; then stopped as well.
    s.keys(&["R"]);
    s.wait_for("a confirmation", |t| t.contains("Start e2e again"));
    s.keys(&["y"]);
    let screen = s.wait_for_secs("the new run, selected and running", 30, |t| {
        t.contains("Runs · 2 · 1 running") && t.contains("started 2")
    });
    let new_id = screen
        .split("started ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .expect("the new id")
        .to_string();
    assert_ne!(new_id, id);
    s.wait_for("its detail", |t| t.contains(&format!("{new_id} · running")));
    s.keys(&["x"]);
    s.wait_for("a confirmation", |t| t.contains(&format!("Stop {new_id}?")));
    s.keys(&["y"]);
    s.wait_for_secs("both stopped", 30, |t| t.contains("Runs · 2 · 0 running"));
    assert_eq!(record_dirs.state(&new_id), "stopped");
    s.keys(&["q"]);
    assert_eq!(s.wait_exit(), "0");
}

/// The run's record, read after the session took the scratch dirs.
struct DirsAt(std::path::PathBuf);

impl DirsAt {
    fn state(&self, id: &str) -> String {
        let text = std::fs::read_to_string(self.0.join("data/runs").join(id).join("run.json"))
            .expect("run.json");
        let record: serde_json::Value = serde_json::from_str(&text).expect("json");
        record["state"].as_str().unwrap_or_default().to_string()
    }
}

#[test]
fn with_no_runs_the_tab_says_how_and_the_form_starts_one() {
    let _gate = crate::support::gate::gate(module_path!());
    let dirs = Dirs::new();
    let data = dirs.root.path().to_path_buf();
    let s = Session::start_with("noruns", 80, 24, "", "--demo", dirs);
    s.wait_for("the dashboard", |t| t.contains("DEMO"));
    s.keys(&["8"]);
    s.wait_for("the hint", |t| {
        t.contains("No training runs yet") && t.contains("gpudeck run --gpus")
    });
    s.keys(&["n"]);
    s.wait_for("the form", |t| {
        t.contains("New run") && t.contains("[x] GPU")
    });
    s.keys(&["-l", "sh -c 'echo hello-from-the-form; sleep 60'"]);
    s.keys(&["Tab"]);
    s.keys(&["-l", "formrun"]);
    s.keys(&["Enter"]);
    let screen = s.wait_for_secs("the run, started from the form", 30, |t| {
        t.contains("formrun") && t.contains("running") && t.contains("hello-from-the-form")
    });
    let id = screen
        .split_whitespace()
        .find(|w| w.contains("-formrun-"))
        .expect("the run id")
        .to_string();
    s.keys(&["x"]);
    s.wait_for("a confirmation", |t| t.contains("Stop "));
    s.keys(&["y"]);
    s.wait_for_secs("the run stopped", 30, |t| t.contains("0 running"));
    // The tab can see the run's processes gone a moment before its supervisor has written the
    // record's last state: wait for that write, then it must say stopped.
    let at = DirsAt(data);
    support::runs::wait_until("the record's last state", || at.state(&id) != "running");
    assert_eq!(at.state(&id), "stopped");
    s.keys(&["q"]);
    assert_eq!(s.wait_exit(), "0");
}
