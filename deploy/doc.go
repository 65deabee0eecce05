// Package deploy holds the manifests that run fsctl outside one machine (k8s/blast-job.yaml: a
// burst split over the pods of an Indexed Job); its test keeps them consistent with fsctl's flags.
package deploy
