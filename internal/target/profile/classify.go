package profile

import "gopkg.in/yaml.v3"

// Classify is the profile's classify section, kept as YAML: blast compiles it (the rules are
// blast's), and a rule's problem names its own line in the profile.
type Classify struct {
	// Node is the section as the profile's file holds it, lines and all.
	Node *yaml.Node
}

// UnmarshalYAML keeps the section as it is.
func (c *Classify) UnmarshalYAML(n *yaml.Node) error {
	c.Node = n
	return nil
}

// Empty reports whether the profile leaves classification out.
func (c Classify) Empty() bool {
	return c.Node == nil || c.Node.Kind == yaml.ScalarNode && c.Node.ShortTag() == "!!null"
}
