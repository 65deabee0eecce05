package profile

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/fsctl/fsctl/internal/platform/kafkaconn"
	"github.com/fsctl/fsctl/internal/platform/yamlfield"
)

// ReachesKafka reports whether the profile says how to reach its brokers (kafka.brokers).
func (p *Profile) ReachesKafka() bool { return len(p.Kafka.Brokers) > 0 }

// KafkaConn is the connection kafka.brokers and the fields beside it describe, its files resolved
// against the profile's folder and its password read from passwordEnv or passwordFile. A variable
// that is not set is a *FieldError (the command cannot be run as asked); a file that cannot be
// read is os.ReadFile's error.
func (p *Profile) KafkaConn() (kafkaconn.Conn, error) {
	c := p.kafkaForm()
	k := p.Kafka
	switch {
	case k.PasswordEnv != "":
		pw, ok := os.LookupEnv(k.PasswordEnv)
		if !ok || pw == "" {
			fe := yamlfield.Errorf("kafka.passwordEnv", "%s is not set: export it with the SASL password of %q", k.PasswordEnv, k.User)
			fe.File = p.source
			return c, fe
		}
		c.SASL.Password = pw
	case k.PasswordFile != "":
		b, err := os.ReadFile(p.Path(k.PasswordFile))
		if err != nil {
			return c, fmt.Errorf("kafka.passwordFile of %s: %w", p.source, err)
		}
		c.SASL.Password = strings.TrimRight(string(b), "\r\n")
	}
	return c, nil
}

// kafkaForm is the connection without its password.
func (p *Profile) kafkaForm() kafkaconn.Conn {
	k := p.Kafka
	return kafkaconn.Conn{
		Brokers: k.Brokers,
		TLS: kafkaconn.TLS{Enabled: k.TLS, CA: p.Path(k.CA), Cert: p.Path(k.Cert), Key: p.Path(k.Key),
			ServerName: k.ServerName, InsecureSkipVerify: k.InsecureSkipVerify},
		SASL: kafkaconn.SASL{Mechanism: strings.ToLower(k.SASL), User: k.User},
	}
}

// kafkaFields are the profile's fields of each part kafkaconn.Validate names by its flag.
var kafkaFields = map[string]string{
	"kafka-brokers": "kafka.brokers", "kafka-sasl": "kafka.sasl", "kafka-user": "kafka.user",
	"kafka-password": "kafka.passwordEnv", "kafka-ca": "kafka.ca", "kafka-cert": "kafka.cert", "kafka-key": "kafka.key",
}

// validateKafka checks the connection's form as a command's flags are checked, each mistake named
// by its field: a connection without brokers, a login without a password's source, a password
// with two sources, a file that is not there.
func (p *Profile) validateKafka() error {
	k := p.Kafka
	c := p.kafkaForm()
	switch {
	case len(k.Brokers) == 0 && (c.TLS.On() || k.SASL != "" || k.User != "" || k.PasswordEnv != "" || k.PasswordFile != ""):
		return yamlfield.Errorf("kafka.brokers", "missing: the TLS and SASL settings describe how to reach brokers; name them (host:port, ...)")
	case len(k.Brokers) == 0:
		return nil
	case k.PasswordEnv != "" && k.PasswordFile != "":
		return yamlfield.Errorf("kafka.passwordFile", "give passwordEnv or passwordFile, not both")
	case k.SASL != "" && k.PasswordEnv == "" && k.PasswordFile == "":
		return yamlfield.Errorf("kafka.passwordEnv", "missing: %s needs the password, from passwordEnv (a variable's name) or passwordFile; never the password itself", k.SASL)
	}
	if k.PasswordEnv != "" || k.PasswordFile != "" {
		c.SASL.Password = "(from " + k.PasswordEnv + k.PasswordFile + ")" // its form only: the value is read at use
	}
	err := c.Validate()
	if pe, ok := errors.AsType[*kafkaconn.PartError](err); ok {
		return yamlfield.Errorf(kafkaFields[pe.Flag], "%s", pe.Msg)
	}
	return err
}
