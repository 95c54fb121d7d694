//! The Ontheia chain dialect (engine v2): step-list documents, ${…} variables, when, edges, JSON repair of model output, step execution over backend traits.
