mod coordinator;
mod metadata;
