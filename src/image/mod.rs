//! What an image is, whoever holds it (the engine, a registry, a pull): its reference and the facts it says it carries.

mod facts;
pub mod reference;

pub use facts::{image_facts, ImageFacts};
pub use reference::{ImageRef, RefError, DEFAULT_REGISTRY, DEFAULT_TAG};
