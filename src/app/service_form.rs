//! The small form `n` opens on the Services tab to start a notebook: on this machine or in a
//! local image, on which GPUs; Enter turns it into the request `gpudeck notebook` makes.

use std::time::Duration;

use crate::runs::{GpuSelection, ServiceKind};
use crate::services::ServiceRequest;

/// The form's fields, in Tab order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServiceField {
    /// `host`, or a local image with JupyterLab.
    Place,
    /// `none`, `count:N`, `0,1`, `all`.
    Gpus,
}

/// A notebook to start, as typed so far.
#[derive(Clone, Debug, PartialEq)]
pub struct ServiceForm {
    pub place: String,
    pub gpus: String,
    pub field: ServiceField,
    /// Why Enter did not start it.
    pub error: Option<String>,
}

impl Default for ServiceForm {
    fn default() -> Self {
        Self {
            place: "host".into(),
            gpus: ServiceKind::Notebook.default_gpus().to_string(),
            field: ServiceField::Place,
            error: None,
        }
    }
}

impl ServiceForm {
    /// The text of the field being typed in.
    pub fn field_text(&mut self) -> &mut String {
        match self.field {
            ServiceField::Place => &mut self.place,
            ServiceField::Gpus => &mut self.gpus,
        }
    }

    pub fn next_field(&mut self) {
        self.field = match self.field {
            ServiceField::Place => ServiceField::Gpus,
            ServiceField::Gpus => ServiceField::Place,
        };
    }

    /// The request `gpudeck notebook [--host | IMAGE] --gpus G` makes (idle kernels shut down
    /// after `idle_stop`, the config's), or why it cannot be made.
    pub fn request(&self, idle_stop: Option<Duration>) -> Result<ServiceRequest, String> {
        let place = self.place.trim();
        if place.is_empty() {
            return Err("where: type host, or a local image with JupyterLab".into());
        }
        let gpus: GpuSelection = self.gpus.parse().map_err(|e| format!("GPUs: {e}"))?;
        Ok(ServiceRequest {
            kind: ServiceKind::Notebook,
            image: (!place.eq_ignore_ascii_case("host")).then(|| place.to_string()),
            gpus,
            dir: None,
            name: None,
            port: None,
            env: Vec::new(),
            idle_stop,
        })
    }

    /// The same start from a shell.
    pub fn command_line(&self) -> String {
        let place = match self.place.trim() {
            p if p.eq_ignore_ascii_case("host") => "--host".to_string(),
            image => image.to_string(),
        };
        format!("gpudeck notebook {place} --gpus {}", self.gpus.trim())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_or_an_image_and_the_gpus_make_the_request_gpudeck_notebook_makes() {
        let mut form = ServiceForm::default();
        assert_eq!(form.gpus, "count:1");
        let host = form.request(None).expect("a request");
        assert_eq!((host.image, host.gpus), (None, GpuSelection::Count(1)));
        form.place = "jupyter/pytorch-notebook:cuda12".into();
        form.gpus = "0,1".into();
        let image = form
            .request(Some(Duration::from_secs(60)))
            .expect("a request");
        assert_eq!(image.idle_stop, Some(Duration::from_secs(60)));
        assert_eq!(
            image.image.as_deref(),
            Some("jupyter/pytorch-notebook:cuda12")
        );
        assert_eq!(image.gpus, GpuSelection::Indices(vec![0, 1]));
        assert_eq!(
            form.command_line(),
            "gpudeck notebook jupyter/pytorch-notebook:cuda12 --gpus 0,1"
        );
        form.gpus = "two".into();
        assert!(form.request(None).unwrap_err().starts_with("GPUs: "));
        form.place = " ".into();
        assert!(form.request(None).is_err());
    }
}
