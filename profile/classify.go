package profile

import "gopkg.in/yaml.v3"

// Classify is the profile's classify section, kept as YAML: blast compiles it (the rules are
// blast's), and reports a rule's problem at Line.
type Classify struct {
	// Raw is the section re-encoded as a classification file.
	Raw []byte
	// Line is where the section starts in the profile.
	Line int
}

// UnmarshalYAML keeps the section as it is.
func (c *Classify) UnmarshalYAML(n *yaml.Node) error {
	b, err := yaml.Marshal(n)
	if err != nil {
		return err
	}
	c.Raw, c.Line = b, n.Line
	return nil
}

// Empty reports whether the profile leaves classification out.
func (c Classify) Empty() bool { return len(c.Raw) == 0 }
