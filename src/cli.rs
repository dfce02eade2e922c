//! Command-line interface: global options and one subcommand per non-interactive twin of a view.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// A terminal home for every GPU on this machine.
#[derive(Debug, Parser)]
#[command(name = "gpudeck", version, about, long_about = None)]
pub struct Cli {
    /// Run on simulated GPUs (no NVIDIA driver needed). GPUDECK_SIM tunes the simulation.
    #[arg(long, global = true)]
    pub demo: bool,

    /// Config file to use instead of the one in the config directory (an error in it is fatal).
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,

    /// Colour theme: dark, light, high-contrast, or a theme file's name in the config dir.
    #[arg(long, global = true, value_name = "NAME")]
    pub theme: Option<String>,

    /// Disable every action that changes something (killing processes).
    #[arg(long, global = true)]
    pub read_only: bool,

    /// Load this libnvidia-ml instead of the system's libnvidia-ml.so.1.
    #[arg(long, global = true, value_name = "PATH")]
    pub nvml_lib: Option<PathBuf>,

    /// Docker Engine to use (unix:///path, tcp://host:port); overrides DOCKER_HOST.
    #[arg(long, global = true, value_name = "URI")]
    pub docker_host: Option<String>,

    /// Refresh interval in milliseconds (minimum 100); overrides the config.
    #[arg(long, global = true, value_name = "MS")]
    pub refresh: Option<u64>,

    #[command(subcommand)]
    pub command: Option<Commands>,
}

#[derive(Debug, Subcommand)]
pub enum Commands {
    /// Print every GPU's facts, live metrics, processes and topology once.
    Gpus {
        /// A stable JSON document instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// List every container with its state and the GPUs it was given.
    Containers {
        /// JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// List local images with the CUDA, cuDNN and framework versions they carry.
    Images {
        /// JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Will these images run here? Verdicts with reasons and fixes for the named images, or for
    /// every local and catalog image (exit 0 all run, 1 some unknown, 2 some will not run).
    Compat {
        /// Images to judge: local tags or ids, or catalog references (none: all of them).
        images: Vec<String>,
        /// A stable JSON document instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Diagnose the driver, GPUs, Docker and CUDA setup: PASS/WARN/FAIL with fixes.
    ///
    /// Exit code 0 when everything passed, 1 with warnings, 2 with failures.
    Doctor {
        /// A stable JSON document (schema gpudeck.doctor/v1) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Pull an image with a progress bar per layer (credentials from your docker config).
    Pull {
        /// The image, e.g. tensorflow/tensorflow:2.17.0-gpu or nvcr.io/nvidia/pytorch:24.05-py3.
        image: String,
        /// One JSON progress object per line instead of progress bars.
        #[arg(long)]
        json: bool,
    },
}
