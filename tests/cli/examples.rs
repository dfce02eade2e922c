//! The example training scripts in assets/examples: valid Python, and what they print is what the
//! Runs tab understands.

use std::process::Command;

use gpudeck::runs::progress::parse_line;

#[test]
fn the_example_scripts_compile() {
    let dir = tempfile::tempdir().unwrap();
    for script in ["pytorch_ddp.py", "tf_mirrored.py"] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("assets/examples")
            .join(script);
        let out = Command::new("python3")
            .args(["-c", "import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)"])
            .arg(&path)
            .arg(dir.path().join(format!("{script}c")))
            .output()
            .expect("python3 runs (the machine's CPython)");
        assert!(
            out.status.success(),
            "{script}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn what_the_pytorch_example_prints_is_parsed_as_progress() {
    // The f-string in pytorch_ddp.py, filled in.
    let event =
        parse_line("epoch=2/5 step=40/782 loss=0.01234 samples_per_sec=51234").expect("progress");
    assert_eq!(event.step, Some(40));
    assert_eq!(event.total_steps, Some(782));
    assert_eq!(event.epoch, Some(2));
    assert!(event
        .scalars
        .iter()
        .any(|(k, v)| k == "loss" && (*v - 0.01234).abs() < 1e-9));
}

#[test]
fn what_the_tensorflow_example_prints_is_parsed_as_progress() {
    // Keras' verbose=2 line for an epoch.
    let event =
        parse_line("782/782 - 12s - 15ms/step - loss: 0.0123 - mae: 0.0871").expect("progress");
    assert_eq!(event.step, Some(782));
    assert!(event.scalars.iter().any(|(k, _)| k == "loss"));
}
