package stack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// fetchMarker sits in KafkaLibs and holds the hash of the pom the jars came from, so a changed pom
// (a new Kafka version) fetches again and an unchanged one costs nothing.
const fetchMarker = ".fsctl-fetched"

// FetchKafka copies the Kafka broker and its runtime dependencies, as listed in the pom at pomPath,
// from Maven Central into cfg.KafkaLibs with `mvn dependency:copy-dependencies`. It does nothing when
// the jars from the same pom are already there.
func FetchKafka(ctx context.Context, cfg Config, pomPath string) error {
	c, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	pom, err := os.ReadFile(pomPath)
	if err != nil {
		return fmt.Errorf("kafka pom: %w", err)
	}
	sum := sha256.Sum256(pom)
	want := hex.EncodeToString(sum[:])
	if got, err := os.ReadFile(filepath.Join(c.KafkaLibs, fetchMarker)); err == nil && strings.TrimSpace(string(got)) == want && kafkaJarsPresent(c.KafkaLibs) {
		fmt.Fprintf(c.Log, "%-9s jars already in %s\n", "kafka", c.KafkaLibs)
		return nil
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return errors.New("mvn not found on PATH; install Maven (apt-get install maven) to fetch the Kafka jars")
	}
	absPom, err := filepath.Abs(pomPath)
	if err != nil {
		return err
	}
	// Copy into a sibling folder and swap it in, so an interrupted download never looks complete.
	tmp := c.KafkaLibs + ".partial"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(tmp), 0o755); err != nil {
		return err
	}
	fmt.Fprintf(c.Log, "%-9s fetching jars from Maven Central into %s\n", "kafka", c.KafkaLibs)
	if _, err := runTool(ctx, filepath.Dir(absPom), mvn, "-q", "-B", "-f", absPom, "dependency:copy-dependencies",
		"-DoutputDirectory="+tmp, "-DincludeScope=runtime"); err != nil {
		return err
	}
	if !kafkaJarsPresent(tmp) {
		return fmt.Errorf("mvn finished but no kafka_2.13 jar is in %s; check %s", tmp, pomPath)
	}
	if err := os.WriteFile(filepath.Join(tmp, fetchMarker), []byte(want+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.RemoveAll(c.KafkaLibs); err != nil {
		return err
	}
	if err := os.Rename(tmp, c.KafkaLibs); err != nil {
		return err
	}
	n, _ := filepath.Glob(filepath.Join(c.KafkaLibs, "*.jar"))
	fmt.Fprintf(c.Log, "%-9s %d jars in %s\n", "kafka", len(n), c.KafkaLibs)
	return nil
}
