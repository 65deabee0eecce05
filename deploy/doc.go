// Package deploy holds the manifests that run fsctl on Kubernetes: the checkout as deployed for a
// sale (k8s/checkout-*.yaml, pre-scaling, a reconcile CronJob) and a burst split over the pods of
// an Indexed Job (k8s/blast-job.yaml); its tests decode them strictly into the Kubernetes API
// types and keep their names consistent with each other and with fsctl's flags.
package deploy
