package reservation

// The mapping functions, for the external tests.
var (
	GRPCCode   = grpcCode
	ToStatus   = toStatus
	FromStatus = fromStatus
)
