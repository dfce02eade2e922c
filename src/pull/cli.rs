//! `gpudeck pull`: the pull job driven from the command line, with Ctrl-C as cancel.

use std::path::Path;

use bollard::auth::DockerCredentials;
use bollard::Docker;

use super::auth::credentials_for;
use super::cli_view::CliView;
use super::job::{start_pull, PullEvent};
use crate::image::ImageRef;

/// The pull succeeded.
pub const EXIT_OK: i32 = 0;
/// The pull failed or was cancelled.
pub const EXIT_PULL_FAILED: i32 = 1;
/// The reference is not valid; nothing was sent to the Engine.
pub const EXIT_BAD_REFERENCE: i32 = 2;

/// Pulls `reference` and returns the exit code. Progress goes to stderr (bars on a terminal,
/// plain lines otherwise) and the digest to stdout; with `json`, every event is one JSON object
/// per line on stdout instead. `credentials_dir` is the Docker config dir (`~/.docker` when None).
/// Ctrl-C cancels the pull: the Engine abandons it and no image is left.
pub async fn pull_cli(
    docker: Docker,
    reference: &str,
    credentials_dir: Option<&Path>,
    json: bool,
) -> i32 {
    let mut view = CliView::new(json);
    let image = match ImageRef::parse(reference) {
        Ok(image) => image,
        Err(error) => {
            view.bad_reference(reference, &error);
            return EXIT_BAD_REFERENCE;
        }
    };
    let credentials = load_credentials(&image, credentials_dir, &mut view).await;
    let mut handle = start_pull(docker, image, credentials);
    view.started(&handle.image);
    let canceller = handle.canceller();
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let mut cancelling = false;
    loop {
        tokio::select! {
            event = handle.events.recv() => match event {
                Some(PullEvent::Progress(progress)) => view.progress(&progress),
                Some(PullEvent::Done { digest, elapsed }) => {
                    view.done(&handle.image, digest.as_deref(), elapsed);
                    return EXIT_OK;
                }
                Some(PullEvent::Failed(error)) => {
                    view.failed(&handle.image, &error);
                    return EXIT_PULL_FAILED;
                }
                None => return EXIT_PULL_FAILED,
            },
            _ = &mut ctrl_c, if !cancelling => {
                cancelling = true;
                canceller.cancel();
            }
        }
    }
}

/// A broken Docker config is reported and the pull goes on anonymously: public images still work,
/// and a private one fails with AuthRequired, whose fix says to log in.
async fn load_credentials(
    image: &ImageRef,
    dir: Option<&Path>,
    view: &mut CliView,
) -> Option<DockerCredentials> {
    let host = image.registry_host().to_string();
    let dir = dir.map(Path::to_path_buf);
    let read = tokio::task::spawn_blocking(move || credentials_for(&host, dir.as_deref())).await;
    match read {
        Ok(Ok(credentials)) => credentials,
        Ok(Err(error)) => {
            view.warning(&format!("{error}; pulling without credentials"));
            None
        }
        Err(join) => {
            view.warning(&format!(
                "reading credentials failed: {join}; pulling without credentials"
            ));
            None
        }
    }
}
