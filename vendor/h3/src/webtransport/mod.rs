mod session_id;
pub use session_id::SessionId;
