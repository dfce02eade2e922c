//! The engine's event stream, reduced to "re-read this container" and "re-read the images".

use std::collections::HashMap;

use bollard::models::{EventMessage, EventMessageTypeEnum};
use bollard::query_parameters::EventsOptionsBuilder;
use futures::stream::BoxStream;
use futures::StreamExt;

use super::connect::Engine;
use super::error::DockerError;
use super::types::EngineEvent;

impl Engine {
    /// Container and image changes from now on. The stream ends when the engine closes it (a
    /// daemon restart); the caller reconnects and re-lists.
    pub fn events(&self) -> BoxStream<'static, Result<EngineEvent, DockerError>> {
        self.event_stream(None)
    }

    /// Like [`Engine::events`], but first replays what the engine still remembers since
    /// `since_unix` (it keeps the last 256 events): take the time, list, then subscribe, and no
    /// change falls between the list and the stream.
    pub fn events_since(
        &self,
        since_unix: i64,
    ) -> BoxStream<'static, Result<EngineEvent, DockerError>> {
        self.event_stream(Some(since_unix))
    }

    fn event_stream(
        &self,
        since_unix: Option<i64>,
    ) -> BoxStream<'static, Result<EngineEvent, DockerError>> {
        let filters = HashMap::from([("type", vec!["container", "image"])]);
        let mut options = EventsOptionsBuilder::new().filters(&filters);
        if let Some(since) = since_unix {
            options = options.since(&since.to_string());
        }
        let engine = self.clone();
        self.docker
            .events(Some(options.build()))
            .filter_map(move |item| {
                let mapped = match item {
                    Ok(message) => engine_event(&message).map(Ok),
                    Err(e) => Some(Err(engine.error(e, "the event stream"))),
                };
                futures::future::ready(mapped)
            })
            .boxed()
    }
}

/// The event a view cares about, or `None` for noise (exec, attach, resize, top...).
pub(crate) fn engine_event(message: &EventMessage) -> Option<EngineEvent> {
    // Health events read "health_status: healthy", exec ones "exec_start: sh".
    let action = message.action.as_deref()?;
    let action = action.split(':').next().unwrap_or(action).trim();
    let id = message.actor.as_ref().and_then(|a| a.id.clone());
    match message.typ? {
        EventMessageTypeEnum::CONTAINER => match action {
            "create" | "start" | "restart" | "die" | "stop" | "kill" | "oom" | "pause"
            | "unpause" | "rename" | "update" | "health_status" => {
                Some(EngineEvent::ContainerChanged { id: id? })
            }
            "destroy" => Some(EngineEvent::ContainerRemoved { id: id? }),
            _ => None,
        },
        EventMessageTypeEnum::IMAGE => match action {
            "pull" | "tag" | "untag" | "delete" | "import" | "load" => {
                Some(EngineEvent::ImagesChanged)
            }
            _ => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bollard::models::EventActor;

    fn message(typ: EventMessageTypeEnum, action: &str) -> EventMessage {
        EventMessage {
            typ: Some(typ),
            action: Some(action.to_string()),
            actor: Some(EventActor {
                id: Some("abc".to_string()),
                attributes: None,
            }),
            ..Default::default()
        }
    }

    #[test]
    fn actions_map_to_refreshes() {
        use EventMessageTypeEnum::{CONTAINER, IMAGE, NETWORK};
        let changed = Some(EngineEvent::ContainerChanged { id: "abc".into() });
        let cases = [
            (CONTAINER, "start", changed.clone()),
            (CONTAINER, "die", changed.clone()),
            (CONTAINER, "health_status: unhealthy", changed.clone()),
            (
                CONTAINER,
                "destroy",
                Some(EngineEvent::ContainerRemoved { id: "abc".into() }),
            ),
            (CONTAINER, "exec_start: sh -c true", None),
            (CONTAINER, "attach", None),
            (IMAGE, "pull", Some(EngineEvent::ImagesChanged)),
            (IMAGE, "untag", Some(EngineEvent::ImagesChanged)),
            (IMAGE, "save", None),
            (NETWORK, "connect", None),
        ];
        for (typ, action, want) in cases {
            assert_eq!(
                engine_event(&message(typ, action)),
                want,
                "{typ:?} {action}"
            );
        }
    }
}
