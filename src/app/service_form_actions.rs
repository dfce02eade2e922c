//! What the keys do in the Services tab's start form: type, move between fields, start the
//! notebook (a command for the effects) or close the form.

use super::action::{Action, Command};
use super::service_form::ServiceForm;
use super::state::{AppState, Overlay};

impl AppState {
    /// `n` on the Services tab: the form, unless read-only.
    pub(super) fn open_service_form(&mut self) {
        if self.refuse_read_only("starting services") {
            return;
        }
        self.overlay = Overlay::ServiceForm(ServiceForm::default());
    }

    pub(super) fn update_service_form(&mut self, action: Action) -> Vec<Command> {
        let idle_stop = self.idle_stop;
        let Overlay::ServiceForm(form) = &mut self.overlay else {
            return Vec::new();
        };
        match action {
            Action::Cancel => self.overlay = Overlay::None,
            Action::Quit => self.quit = true,
            Action::NextTab | Action::PrevTab | Action::Up | Action::Down => form.next_field(),
            Action::FilterInput(c) => {
                form.field_text().push(c);
                form.error = None;
            }
            Action::FilterBackspace => {
                form.field_text().pop();
                form.error = None;
            }
            Action::Confirm => match form.request(idle_stop) {
                Ok(request) => {
                    let line = form.command_line();
                    self.overlay = Overlay::None;
                    self.set_status(format!("starting a notebook ({line})…"), false);
                    return vec![Command::StartService(Box::new(request))];
                }
                Err(why) => form.error = Some(why),
            },
            _ => {}
        }
        Vec::new()
    }
}
