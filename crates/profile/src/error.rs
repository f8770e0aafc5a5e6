//! What goes wrong making the profile.

/// What went wrong making the profile.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Cube(#[from] cube::Error),
}
