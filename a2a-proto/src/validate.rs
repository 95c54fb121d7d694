//! The proto's REQUIRED field behaviour (spec §5.7), checked after decoding.
//! Decoding follows ProtoJSON, where an absent field is its default value,
//! so a message without `messageId` decodes; [`Validate`] is what rejects
//! it, naming every bad field the way a `google.rpc.BadRequest` does.

use crate::card::{AgentCard, AgentInterface, AgentSkill};
use crate::errors::{A2aError, FieldViolation};
use crate::message::{Artifact, Message, Role};
use crate::push::TaskPushNotificationConfig;
use crate::requests::{
    CancelTaskRequest, DeleteTaskPushNotificationConfigRequest, GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTasksRequest, SendMessageRequest, SubscribeToTaskRequest,
};
use crate::task::{Task, TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent};
use crate::{A2aRequest, SendMessageResponse, StreamResponse};

/// The largest `pageSize` of `ListTasks`.
pub const MAX_PAGE_SIZE: i32 = 100;

/// Collects violations under a path prefix.
pub struct Violations {
    prefix: String,
    found: Vec<FieldViolation>,
}

impl Violations {
    fn path(&self, field: &str) -> String {
        if self.prefix.is_empty() {
            field.to_owned()
        } else {
            format!("{}.{field}", self.prefix)
        }
    }

    /// Records a violation of `field` (relative to the current prefix).
    pub fn add(&mut self, field: &str, description: impl Into<String>) {
        let field = self.path(field);
        self.found.push(FieldViolation {
            field,
            description: description.into(),
        });
    }

    /// `field` must not be empty.
    pub fn required(&mut self, field: &str, value: &str) {
        if value.is_empty() {
            self.add(field, "is required");
        }
    }

    /// `field`, a required list, must have an element.
    pub fn non_empty<T>(&mut self, field: &str, items: &[T]) {
        if items.is_empty() {
            self.add(field, "needs at least one element");
        }
    }

    /// A history length must not be negative.
    fn history_length(&mut self, value: Option<i32>) {
        if value.is_some_and(|n| n < 0) {
            self.add("historyLength", "must not be negative");
        }
    }

    /// Checks a nested value under `field`.
    pub fn nested(&mut self, field: &str, value: &impl Validate) {
        let inner = self.path(field);
        let outer = std::mem::replace(&mut self.prefix, inner);
        value.check(self);
        self.prefix = outer;
    }

    /// Checks each element of a list under `field[i]`.
    pub fn each<T: Validate>(&mut self, field: &str, items: &[T]) {
        for (index, item) in items.iter().enumerate() {
            self.nested(&format!("{field}[{index}]"), item);
        }
    }
}

/// A wire type with REQUIRED fields or bounds to check.
pub trait Validate {
    /// Records every violation of `self` into `out`.
    fn check(&self, out: &mut Violations);

    /// Every violation, paths from `self`.
    fn violations(&self) -> Vec<FieldViolation> {
        let mut out = Violations {
            prefix: String::new(),
            found: Vec::new(),
        };
        self.check(&mut out);
        out.found
    }

    /// `Ok`, or an `InvalidParamsError` listing the violations.
    fn validate(&self) -> Result<(), A2aError> {
        let found = self.violations();
        if found.is_empty() {
            Ok(())
        } else {
            Err(A2aError::invalid_params(found))
        }
    }
}

impl Validate for Message {
    fn check(&self, out: &mut Violations) {
        out.required("messageId", &self.message_id);
        if self.role == Role::Unspecified {
            out.add("role", "is required");
        }
        out.non_empty("parts", &self.parts);
    }
}

impl Validate for Artifact {
    fn check(&self, out: &mut Violations) {
        out.required("artifactId", &self.artifact_id);
        out.non_empty("parts", &self.parts);
    }
}

impl Validate for TaskStatus {
    fn check(&self, out: &mut Violations) {
        if self.state == TaskState::Unspecified {
            out.add("state", "is required");
        }
        if let Some(message) = &self.message {
            out.nested("message", message);
        }
    }
}

impl Validate for Task {
    fn check(&self, out: &mut Violations) {
        out.required("id", &self.id);
        out.nested("status", &self.status);
        out.each("artifacts", &self.artifacts);
        out.each("history", &self.history);
    }
}

impl Validate for TaskStatusUpdateEvent {
    fn check(&self, out: &mut Violations) {
        out.required("taskId", &self.task_id);
        out.required("contextId", &self.context_id);
        out.nested("status", &self.status);
    }
}

impl Validate for TaskArtifactUpdateEvent {
    fn check(&self, out: &mut Violations) {
        out.required("taskId", &self.task_id);
        out.required("contextId", &self.context_id);
        out.nested("artifact", &self.artifact);
    }
}

impl Validate for StreamResponse {
    fn check(&self, out: &mut Violations) {
        match self {
            StreamResponse::Task(task) => out.nested("task", task),
            StreamResponse::Message(message) => out.nested("message", message),
            StreamResponse::StatusUpdate(event) => out.nested("statusUpdate", event),
            StreamResponse::ArtifactUpdate(event) => out.nested("artifactUpdate", event),
        }
    }
}

impl Validate for SendMessageResponse {
    fn check(&self, out: &mut Violations) {
        match self {
            SendMessageResponse::Task(task) => out.nested("task", task),
            SendMessageResponse::Message(message) => out.nested("message", message),
        }
    }
}

impl Validate for TaskPushNotificationConfig {
    fn check(&self, out: &mut Violations) {
        out.required("url", &self.url);
        if let Some(auth) = &self.authentication
            && auth.scheme.is_empty()
        {
            out.add("authentication.scheme", "is required");
        }
    }
}

impl Validate for SendMessageRequest {
    fn check(&self, out: &mut Violations) {
        out.nested("message", &self.message);
        if let Some(configuration) = &self.configuration {
            let inner = out.path("configuration");
            let outer = std::mem::replace(&mut out.prefix, inner);
            out.history_length(configuration.history_length);
            if let Some(push) = &configuration.task_push_notification_config {
                out.nested("taskPushNotificationConfig", push);
            }
            out.prefix = outer;
        }
    }
}

impl Validate for GetTaskRequest {
    fn check(&self, out: &mut Violations) {
        out.required("id", &self.id);
        out.history_length(self.history_length);
    }
}

impl Validate for ListTasksRequest {
    fn check(&self, out: &mut Violations) {
        if let Some(size) = self.page_size
            && !(1..=MAX_PAGE_SIZE).contains(&size)
        {
            out.add(
                "pageSize",
                format!("must be between 1 and {MAX_PAGE_SIZE}, got {size}"),
            );
        }
        out.history_length(self.history_length);
    }
}

impl Validate for CancelTaskRequest {
    fn check(&self, out: &mut Violations) {
        out.required("id", &self.id);
    }
}

impl Validate for SubscribeToTaskRequest {
    fn check(&self, out: &mut Violations) {
        out.required("id", &self.id);
    }
}

impl Validate for GetTaskPushNotificationConfigRequest {
    fn check(&self, out: &mut Violations) {
        out.required("taskId", &self.task_id);
        out.required("id", &self.id);
    }
}

impl Validate for DeleteTaskPushNotificationConfigRequest {
    fn check(&self, out: &mut Violations) {
        out.required("taskId", &self.task_id);
        out.required("id", &self.id);
    }
}

impl Validate for ListTaskPushNotificationConfigsRequest {
    fn check(&self, out: &mut Violations) {
        out.required("taskId", &self.task_id);
        if self.page_size < 0 {
            out.add("pageSize", "must not be negative");
        }
    }
}

impl Validate for GetExtendedAgentCardRequest {
    fn check(&self, _: &mut Violations) {}
}

impl Validate for A2aRequest {
    fn check(&self, out: &mut Violations) {
        match self {
            A2aRequest::SendMessage(r) | A2aRequest::SendStreamingMessage(r) => r.check(out),
            A2aRequest::GetTask(r) => r.check(out),
            A2aRequest::ListTasks(r) => r.check(out),
            A2aRequest::CancelTask(r) => r.check(out),
            A2aRequest::SubscribeToTask(r) => r.check(out),
            A2aRequest::CreateTaskPushNotificationConfig(r) => {
                r.check(out);
                out.required("taskId", &r.task_id);
            }
            A2aRequest::GetTaskPushNotificationConfig(r) => r.check(out),
            A2aRequest::ListTaskPushNotificationConfigs(r) => r.check(out),
            A2aRequest::DeleteTaskPushNotificationConfig(r) => r.check(out),
            A2aRequest::GetExtendedAgentCard(r) => r.check(out),
        }
    }
}

impl Validate for AgentInterface {
    fn check(&self, out: &mut Violations) {
        out.required("url", &self.url);
        out.required("protocolBinding", &self.protocol_binding);
        out.required("protocolVersion", &self.protocol_version);
    }
}

impl Validate for AgentSkill {
    fn check(&self, out: &mut Violations) {
        out.required("id", &self.id);
        out.required("name", &self.name);
        out.required("description", &self.description);
        out.non_empty("tags", &self.tags);
    }
}

impl Validate for AgentCard {
    fn check(&self, out: &mut Violations) {
        out.required("name", &self.name);
        out.required("description", &self.description);
        out.non_empty("supportedInterfaces", &self.supported_interfaces);
        out.each("supportedInterfaces", &self.supported_interfaces);
        out.required("version", &self.version);
        out.non_empty("defaultInputModes", &self.default_input_modes);
        out.non_empty("defaultOutputModes", &self.default_output_modes);
        out.non_empty("skills", &self.skills);
        out.each("skills", &self.skills);
        if let Some(provider) = &self.provider {
            out.required("provider.url", &provider.url);
            out.required("provider.organization", &provider.organization);
        }
        for (index, signature) in self.signatures.iter().enumerate() {
            out.required(
                &format!("signatures[{index}].protected"),
                &signature.protected,
            );
            out.required(
                &format!("signatures[{index}].signature"),
                &signature.signature,
            );
        }
    }
}
