const DEFAULT_BATCH_SIZE: usize = 256;

mod utils;

mod init;
pub use init::*;

mod r#impl;
