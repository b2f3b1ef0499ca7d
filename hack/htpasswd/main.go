// Command htpasswd prints one htpasswd line, USER:<bcrypt hash of PASS>,
// the only hash format docker-registry's htpasswd auth accepts. It stands
// in for apache2-utils' `htpasswd -nbB USER PASS`:
//
//	go run ./hack/htpasswd USER PASS
package main

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

func main() {
	if len(os.Args) != 3 || os.Args[1] == "" || strings.Contains(os.Args[1], ":") {
		fmt.Fprintln(os.Stderr, "usage: htpasswd USER PASS (USER without ':')")
		os.Exit(2)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(os.Args[2]), bcrypt.DefaultCost)
	if err != nil {
		fmt.Fprintln(os.Stderr, "htpasswd:", err)
		os.Exit(1)
	}
	fmt.Printf("%s:%s\n", os.Args[1], hash)
}
