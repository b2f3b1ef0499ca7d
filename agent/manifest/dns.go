package manifest

// The API server's rules for spec.dnsPolicy, spec.dnsConfig,
// spec.hostAliases and spec.hostnameOverride. The pod's resolver
// configuration itself is agent/podspec's (poddns.go).

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateDNS checks spec.dnsPolicy None's needs, spec.dnsConfig and
// spec.hostAliases as the API server does.
func validateDNS(spec *v1.PodSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if o := spec.HostnameOverride; o != nil {
		// The API server's rules for the field (beta, on by default).
		hoPath := fldPath.Child("hostnameOverride")
		for _, msg := range validation.IsDNS1123Subdomain(*o) {
			errs = append(errs, field.Invalid(hoPath, *o, msg))
		}
		if len(*o) > 64 {
			errs = append(errs, field.TooLong(hoPath, *o, 64))
		}
		if spec.SetHostnameAsFQDN != nil && *spec.SetHostnameAsFQDN {
			errs = append(errs, field.Invalid(hoPath, *o, "may not be set when setHostnameAsFQDN is true"))
		}
		if spec.HostNetwork {
			errs = append(errs, field.Invalid(hoPath, *o, "may not be set when hostNetwork is true"))
		}
	}
	cfgPath := fldPath.Child("dnsConfig")
	if spec.DNSPolicy == v1.DNSNone && spec.DNSConfig == nil {
		errs = append(errs, field.Required(cfgPath, fmt.Sprintf("must provide `dnsConfig` when `dnsPolicy` is %s", v1.DNSNone)))
	}
	if c := spec.DNSConfig; c != nil {
		nsPath := cfgPath.Child("nameservers")
		if len(c.Nameservers) > MaxDNSNameservers {
			errs = append(errs, field.Invalid(nsPath, c.Nameservers, fmt.Sprintf("must not have more than %d nameservers", MaxDNSNameservers)))
		}
		for i, ns := range c.Nameservers {
			errs = append(errs, validation.IsValidIP(nsPath.Index(i), ns)...)
		}
		if spec.DNSPolicy == v1.DNSNone && len(c.Nameservers) == 0 {
			errs = append(errs, field.Required(nsPath, fmt.Sprintf("must provide at least one DNS nameserver when `dnsPolicy` is %s", v1.DNSNone)))
		}
		sPath := cfgPath.Child("searches")
		if len(c.Searches) > MaxDNSSearchPaths {
			errs = append(errs, field.Invalid(sPath, c.Searches, fmt.Sprintf("must not have more than %d search paths", MaxDNSSearchPaths)))
		}
		if len(strings.Join(c.Searches, " ")) > MaxDNSSearchListChars {
			errs = append(errs, field.Invalid(sPath, c.Searches, fmt.Sprintf("must not have more than %d characters (including spaces) in the search list", MaxDNSSearchListChars)))
		}
		for i, s := range c.Searches {
			// A trailing dot is fine.
			for _, msg := range validation.IsDNS1123Subdomain(strings.TrimSuffix(s, ".")) {
				errs = append(errs, field.Invalid(sPath.Index(i), s, msg))
			}
		}
		for i, o := range c.Options {
			if o.Name == "" {
				errs = append(errs, field.Required(cfgPath.Child("options").Index(i).Child("name"), "must not be empty"))
			}
		}
	}
	for i, ha := range spec.HostAliases {
		haPath := fldPath.Child("hostAliases").Index(i)
		errs = append(errs, validation.IsValidIP(haPath.Child("ip"), ha.IP)...)
		for j, h := range ha.Hostnames {
			for _, msg := range validation.IsDNS1123Subdomain(h) {
				errs = append(errs, field.Invalid(haPath.Child("hostnames").Index(j), h, msg))
			}
		}
	}
	return errs
}

// Resolver limits of the API (glibc's resolv.conf limits); the agent trims
// a pod's resolver configuration to the same.
const (
	MaxDNSNameservers     = 3
	MaxDNSSearchPaths     = 32
	MaxDNSSearchListChars = 2048
)
