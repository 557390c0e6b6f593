package main

import "github.com/jaco-project/jaco/api"

// endpointModes are --endpoint-mode's words, as Swarm spells them.
var endpointModes = map[string]api.EndpointMode{
	"vip":   api.EndpointMode_ENDPOINT_MODE_VIP,
	"dnsrr": api.EndpointMode_ENDPOINT_MODE_DNSRR,
}
