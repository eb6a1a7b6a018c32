//! Create: BeforeCreate (system fields, PrepareForCreate, validation), the write as a
//! create-if-absent, and generateName retried with fresh names on a collision (KEP-4420).

use super::*;
use crate::registry::admission::Operation;
use std::sync::OnceLock;

impl GenericStore {
    /// BeforeCreate: system fields, PrepareForCreate, validation, the writer's checks.
    pub(super) fn prepare_create(&self, ctx: &Context, obj: &mut Value) -> Result<()> {
        self.ensure_namespace(ctx, obj)?;
        let meta = metadata_mut(obj);
        if meta
            .get("resourceVersion")
            .and_then(Value::as_str)
            .is_some_and(|rv| !rv.is_empty())
        {
            return Err(Error::Internal(
                "resourceVersion should not be set on objects to be created".into(),
            ));
        }
        let name = meta
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let generate = meta
            .get("generateName")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        if name.is_empty() && !generate.is_empty() {
            meta.insert("name".into(), Value::from((self.name_generator)(&generate)));
        }
        meta.insert(
            "uid".into(),
            Value::from(crate::api::new_uuid().to_string()),
        );
        meta.insert("creationTimestamp".into(), Value::from(now_rfc3339()));
        meta.remove("deletionTimestamp");
        meta.remove("deletionGracePeriodSeconds");
        meta.remove("selfLink");
        if self.strategy.uses_generation() {
            meta.insert("generation".into(), Value::from(1));
        } else {
            meta.remove("generation");
        }
        self.strategy.prepare_for_create(obj);
        let mut errs = Vec::new();
        if !self.strategy.validates_object_meta() {
            let namespaced = self.strategy.info().namespaced;
            errs = validate_object_meta(obj, namespaced, self.strategy.name_rule());
        }
        errs.extend(self.strategy.validate(obj));
        if !errs.is_empty() {
            return Err(self.invalid(name_of(obj), errs));
        }
        for w in self.strategy.warnings_on_create(obj) {
            ctx.warnings.add(w);
        }
        self.strategy.authorize_write(ctx, obj, None)
    }

    /// Creates an object (already decoded with [`GenericStore::decode_request`]). A name made
    /// from `generateName` that is taken already is made again, up to
    /// [`MAX_NAME_GENERATION_CREATE_ATTEMPTS`] times in all, as kube-apiserver's
    /// createWithGenerateNameRetry (KEP-4420), so clients see no collisions.
    /// The result is shared with the memo, so the response and the watchers encode it once.
    pub(crate) async fn create(&self, ctx: &Context, obj: Value) -> Result<Arc<Decoded>> {
        self.strategy.admit_create()?;
        self.start_cache().await;
        self.admit_namespace(&ctx.namespace, name_of(&obj)).await?;
        let name = name_of(&obj).to_string();
        let mut obj = self
            .admit_mutating(ctx, Operation::Create, &name, Some(obj), None)
            .await?
            .unwrap_or(Value::Null);
        let generated = needs_name_generation(&obj);
        let mut attempts = 1;
        loop {
            match self.create_once(ctx, obj).await? {
                Attempt::Created(done) => return Ok(done),
                Attempt::Taken { error, stored } => {
                    if !generated || attempts >= MAX_NAME_GENERATION_CREATE_ATTEMPTS {
                        return Err(error);
                    }
                    attempts += 1;
                    // The attempt took the object; it comes back from what was to be stored
                    // (collisions are rare, so the common path copies nothing), without the
                    // name, so that preparing it again makes a new one.
                    obj = self.decode_fresh(&KeyValue {
                        key: String::new(),
                        value: stored,
                        create_revision: 0,
                        mod_revision: 0,
                    })?;
                    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                        meta.remove("name");
                        meta.remove("resourceVersion");
                    }
                }
            }
        }
    }

    /// One attempt of [`Self::create`]: system fields, the name, validation, the write.
    pub(super) async fn create_once(&self, ctx: &Context, mut obj: Value) -> Result<Attempt> {
        let ns = ctx.namespace.clone();
        self.prepare_create(ctx, &mut obj)?;
        let name = name_of(&obj).to_string();
        let made = OnceLock::new();
        self.admit_validating(
            ctx,
            Operation::Create,
            &name,
            (Some(&obj), Some(&made)),
            None,
        )
        .await?;
        let key = self.key(&ns, &name);
        let generated = obj.at("/metadata/generateName").is_some();
        let i = self.strategy.info();
        let taken = |stored| Attempt::Taken {
            error: Error::AlreadyExists {
                group: i.group.to_string(),
                resource: i.resource.to_string(),
                name: name.clone(),
                generated,
            },
            stored,
        };
        if ctx.dry_run {
            // Encoding checks the size limit, which applies to dry runs too.
            let stored = self.encode(obj.clone())?;
            return match self
                .metered(
                    crate::metrics::storage::Operation::Get,
                    self.storage.get(&key),
                )
                .await
            {
                Ok(_) => Ok(taken(stored)),
                Err(_) => Ok(Attempt::Created(Arc::new(Decoded::new(obj)))),
            };
        }
        let stored = self.encode_for_write_from(&key, obj, made.into_inner())?;
        match self
            .metered(
                crate::metrics::storage::Operation::Create,
                self.storage.create(&key, stored.clone(), None),
            )
            .await
        {
            Ok(kv) => Ok(Attempt::Created(self.decode_shared(&kv)?)),
            Err(storage::Error::AlreadyExists { .. }) => Ok(taken(stored)),
            Err(e) => Err(self.storage_error(&name, e)),
        }
    }
}

/// How one attempt of a create ended.
pub(super) enum Attempt {
    /// The object was created (or would be, on a dry run).
    Created(Arc<Decoded>),
    /// The name is taken: the 409 to answer, and the object as it was to be stored.
    Taken { error: Error, stored: bytes::Bytes },
}

/// How many times a create whose name comes from `generateName` is tried in all
/// (maxNameGenerationCreateAttempts: enough for a million names per prefix with a 0.1%
/// chance of any collision reaching the client).
pub(crate) const MAX_NAME_GENERATION_CREATE_ATTEMPTS: usize = 8;

/// Whether the server picks the name: no `metadata.name`, a non-empty `generateName`
/// (needsNameGeneration).
pub(super) fn needs_name_generation(obj: &Value) -> bool {
    let meta = obj.get("metadata");
    let field = |f: &str| {
        meta.and_then(|m| m.get(f))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    field("name").is_empty() && !field("generateName").is_empty()
}

/// generateName: prefix truncated to 58 characters plus 5 random characters
/// (names.SimpleNameGenerator, alphabet of utilrand.String).
pub(crate) fn generate_name(prefix: &str) -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut p: String = prefix.chars().take(58).collect();
    let mut rng = rand::thread_rng();
    for _ in 0..5 {
        p.push(ALPHABET[rng.gen_range(0..ALPHABET.len())] as char);
    }
    p
}
