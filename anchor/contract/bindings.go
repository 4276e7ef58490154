// Code generated - DO NOT EDIT.
// This file is a generated binding and any manual changes will be lost.

package contract

import (
	"context"
	"errors"
	"math/big"
	"strings"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/accounts/abi/bind"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/event"
)

// Reference imports to suppress errors if they are not otherwise used.
var (
	_ = errors.New
	_ = big.NewInt
	_ = strings.NewReader
	_ = ethereum.NotFound
	_ = bind.Bind
	_ = common.Big1
	_ = types.BloomLookup
	_ = event.NewSubscription
	_ = abi.ConvertType
	_ = time.Tick
	_ = context.Background
)

// ProjectStateAnchorMetaData contains all meta data concerning the ProjectStateAnchor contract.
var ProjectStateAnchorMetaData = &bind.MetaData{
	ABI: "[{\"inputs\":[],\"stateMutability\":\"nonpayable\",\"type\":\"constructor\"},{\"inputs\":[{\"internalType\":\"bytes32\",\"name\":\"projectId\",\"type\":\"bytes32\"},{\"internalType\":\"uint64\",\"name\":\"version\",\"type\":\"uint64\"},{\"internalType\":\"uint256\",\"name\":\"anchorId\",\"type\":\"uint256\"},{\"internalType\":\"bytes32\",\"name\":\"stateHash\",\"type\":\"bytes32\"}],\"name\":\"AlreadyAnchored\",\"type\":\"error\"},{\"inputs\":[],\"name\":\"LengthMismatch\",\"type\":\"error\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"caller\",\"type\":\"address\"}],\"name\":\"NotOwner\",\"type\":\"error\"},{\"inputs\":[{\"internalType\":\"bytes32\",\"name\":\"projectId\",\"type\":\"bytes32\"},{\"internalType\":\"uint64\",\"name\":\"version\",\"type\":\"uint64\"}],\"name\":\"ZeroStateHash\",\"type\":\"error\"},{\"anonymous\":false,\"inputs\":[{\"indexed\":true,\"internalType\":\"bytes32\",\"name\":\"eventHash\",\"type\":\"bytes32\"},{\"indexed\":false,\"internalType\":\"bytes\",\"name\":\"encryptedContent\",\"type\":\"bytes\"},{\"indexed\":false,\"internalType\":\"string\",\"name\":\"category\",\"type\":\"string\"},{\"indexed\":false,\"internalType\":\"uint8\",\"name\":\"importance\",\"type\":\"uint8\"},{\"indexed\":false,\"internalType\":\"uint32\",\"name\":\"plainLength\",\"type\":\"uint32\"}],\"name\":\"MemoryAnchored\",\"type\":\"event\"},{\"anonymous\":false,\"inputs\":[{\"indexed\":true,\"internalType\":\"uint256\",\"name\":\"anchorId\",\"type\":\"uint256\"},{\"indexed\":true,\"internalType\":\"bytes32\",\"name\":\"projectId\",\"type\":\"bytes32\"},{\"indexed\":false,\"internalType\":\"uint64\",\"name\":\"version\",\"type\":\"uint64\"},{\"indexed\":false,\"internalType\":\"bytes32\",\"name\":\"stateHash\",\"type\":\"bytes32\"}],\"name\":\"StateAnchored\",\"type\":\"event\"},{\"inputs\":[{\"internalType\":\"bytes32\",\"name\":\"projectId\",\"type\":\"bytes32\"},{\"internalType\":\"uint64\",\"name\":\"version\",\"type\":\"uint64\"},{\"internalType\":\"bytes32\",\"name\":\"stateHash\",\"type\":\"bytes32\"}],\"name\":\"anchor\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"anchorId\",\"type\":\"uint256\"}],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"bytes32[]\",\"name\":\"projectIds\",\"type\":\"bytes32[]\"},{\"internalType\":\"uint64[]\",\"name\":\"versions\",\"type\":\"uint64[]\"},{\"internalType\":\"bytes32[]\",\"name\":\"stateHashes\",\"type\":\"bytes32[]\"}],\"name\":\"anchorBatch\",\"outputs\":[{\"internalType\":\"uint256[]\",\"name\":\"anchorIds\",\"type\":\"uint256[]\"}],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"anchorCount\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"\",\"type\":\"uint256\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"bytes32[]\",\"name\":\"eventHashes\",\"type\":\"bytes32[]\"},{\"internalType\":\"bytes[]\",\"name\":\"encryptedContents\",\"type\":\"bytes[]\"},{\"internalType\":\"string[]\",\"name\":\"categories\",\"type\":\"string[]\"},{\"internalType\":\"uint8[]\",\"name\":\"importances\",\"type\":\"uint8[]\"},{\"internalType\":\"uint32[]\",\"name\":\"plainLengths\",\"type\":\"uint32[]\"}],\"name\":\"anchorMemories\",\"outputs\":[],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"bytes32\",\"name\":\"projectId\",\"type\":\"bytes32\"},{\"internalType\":\"uint64\",\"name\":\"version\",\"type\":\"uint64\"}],\"name\":\"getAnchor\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"anchorId\",\"type\":\"uint256\"},{\"internalType\":\"bytes32\",\"name\":\"anchoredProjectId\",\"type\":\"bytes32\"},{\"internalType\":\"uint64\",\"name\":\"anchoredVersion\",\"type\":\"uint64\"},{\"internalType\":\"bytes32\",\"name\":\"stateHash\",\"type\":\"bytes32\"},{\"internalType\":\"uint64\",\"name\":\"anchoredAt\",\"type\":\"uint64\"},{\"internalType\":\"address\",\"name\":\"anchoredBy\",\"type\":\"address\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"uint256\",\"name\":\"anchorId\",\"type\":\"uint256\"}],\"name\":\"getAnchorById\",\"outputs\":[{\"internalType\":\"bytes32\",\"name\":\"projectId\",\"type\":\"bytes32\"},{\"internalType\":\"uint64\",\"name\":\"version\",\"type\":\"uint64\"},{\"internalType\":\"bytes32\",\"name\":\"stateHash\",\"type\":\"bytes32\"},{\"internalType\":\"uint64\",\"name\":\"anchoredAt\",\"type\":\"uint64\"},{\"internalType\":\"address\",\"name\":\"anchoredBy\",\"type\":\"address\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"bytes32[]\",\"name\":\"projectIds\",\"type\":\"bytes32[]\"},{\"internalType\":\"uint64[]\",\"name\":\"versions\",\"type\":\"uint64[]\"}],\"name\":\"getAnchorIds\",\"outputs\":[{\"internalType\":\"uint256[]\",\"name\":\"anchorIds\",\"type\":\"uint256[]\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"owner\",\"outputs\":[{\"internalType\":\"address\",\"name\":\"\",\"type\":\"address\"}],\"stateMutability\":\"view\",\"type\":\"function\"}]",
	Bin: "0x60a0604052348015600f57600080fd5b5033608052608051610f046100446000396000818161019b015281816101f50152818161035701526106540152610f046000f3fe608060405234801561001057600080fd5b50600436106100885760003560e01c80636a9fc0b21161005b5780636a9fc0b21461012b57806370c127c6146101835780638da5cb5b14610196578063c74f76dd146101d557600080fd5b8063140130381461008d5780632a1a34c6146100b657806332bf361b146100cb57806334f96c8c14610119575b600080fd5b6100a061009b366004610a6c565b6101e8565b6040516100ad9190610b0f565b60405180910390f35b6100c96100c4366004610b52565b61034c565b005b6100de6100d9366004610c58565b6104e9565b604080519586526001600160401b03948516602087015285019290925290911660608301526001600160a01b0316608082015260a0016100ad565b6000545b6040519081526020016100ad565b61013e610139366004610c8d565b61058b565b6040805196875260208701959095526001600160401b039384169486019490945260608501919091521660808301526001600160a01b031660a082015260c0016100ad565b61011d610191366004610cb9565b610647565b6101bd7f000000000000000000000000000000000000000000000000000000000000000081565b6040516001600160a01b0390911681526020016100ad565b6100a06101e3366004610cef565b6106a9565b6060336001600160a01b037f0000000000000000000000000000000000000000000000000000000000000000161461023a5760405163245aecd360e01b81523360048201526024015b60405180910390fd5b85848114158061024a5750828114155b1561026b576040516001621398b960e31b0319815260040160405180910390fd5b806001600160401b0381111561028357610283610d5e565b6040519080825280602002602001820160405280156102ac578160200160208202803683370190505b50915060005b818110156103405761031b8989838181106102cf576102cf610d74565b905060200201358888848181106102e8576102e8610d74565b90506020020160208101906102fd9190610d8a565b87878581811061030f5761030f610d74565b905060200201356107c2565b83828151811061032d5761032d610d74565b60209081029190910101526001016102b2565b50509695505050505050565b336001600160a01b037f000000000000000000000000000000000000000000000000000000000000000016146103975760405163245aecd360e01b8152336004820152602401610231565b8887811415806103a75750858114155b806103b25750838114155b806103bd5750818114155b156103de576040516001621398b960e31b0319815260040160405180910390fd5b60005b818110156104db578b8b828181106103fb576103fb610d74565b905060200201357fa9019c351a56d141f0ad483800c02fcf210cc18e522126dce76273559a45101c8b8b8481811061043557610435610d74565b90506020028101906104479190610da5565b8b8b8681811061045957610459610d74565b905060200281019061046b9190610da5565b8b8b8881811061047d5761047d610d74565b90506020020160208101906104929190610deb565b8a8a898181106104a4576104a4610d74565b90506020020160208101906104b99190610e0e565b6040516104cb96959493929190610e5d565b60405180910390a26001016103e1565b505050505050505050505050565b6000808080808515806104fd575060005486115b1561051657506000935083925082915081905080610582565b600080610524600189610ea7565b8154811061053457610534610d74565b600091825260209091206004909102018054600282015460018301546003909301549198506001600160401b038082169850929650600160401b900490911693506001600160a01b03169150505b91939590929450565b60008281526001602090815260408083206001600160401b038516845290915281205490808080808581036105d15750600094508493508392508291508190508061063d565b6000806105df600189610ea7565b815481106105ef576105ef610d74565b600091825260209091206004909102018054600282015460018301546003909301549198506001600160401b038082169850929650600160401b900490911693506001600160a01b03169150505b9295509295509295565b6000336001600160a01b037f000000000000000000000000000000000000000000000000000000000000000016146106945760405163245aecd360e01b8152336004820152602401610231565b61069f8484846107c2565b90505b9392505050565b6060838281146106cf576040516001621398b960e31b0319815260040160405180910390fd5b806001600160401b038111156106e7576106e7610d5e565b604051908082528060200260200182016040528015610710578160200160208202803683370190505b50915060005b818110156107b8576001600088888481811061073457610734610d74565b905060200201358152602001908152602001600020600086868481811061075d5761075d610d74565b90506020020160208101906107729190610d8a565b6001600160401b03166001600160401b03168152602001908152602001600020548382815181106107a5576107a5610d74565b6020908102919091010152600101610716565b5050949350505050565b6000816107f457604051630440b09b60e21b8152600481018590526001600160401b0384166024820152604401610231565b5060008381526001602090815260408083206001600160401b038616845290915290205480156108965760008061082c600184610ea7565b8154811061083c5761083c610d74565b9060005260206000209060040201600101549050828114610890576040516336f56b8360e01b8152600481018690526001600160401b03851660248201526044810183905260648101829052608401610231565b506106a2565b506040805160a08101825284815260208082018481526001600160401b03868116848601818152428316606087019081523360808801908152600080546001808201835582805299517f290decd9548b62a8d60345a988386fc84ba6bc95484008f6362f93160ef3e56360049092029182015596517f290decd9548b62a8d60345a988386fc84ba6bc95484008f6362f93160ef3e56488015592517f290decd9548b62a8d60345a988386fc84ba6bc95484008f6362f93160ef3e5658701805493519187166fffffffffffffffffffffffffffffffff1990941693909317600160401b919096160294909417905591517f290decd9548b62a8d60345a988386fc84ba6bc95484008f6362f93160ef3e56690930180546001600160a01b0319166001600160a01b03909416939093179092558054888252938352848120828252835284902083905583519081529081018490529091859183917fe4f1c210561f4a81f98d15ba49271649afe260b05099568c25c46e593b7aa013910160405180910390a39392505050565b60008083601f840112610a3357600080fd5b5081356001600160401b03811115610a4a57600080fd5b6020830191508360208260051b8501011115610a6557600080fd5b9250929050565b60008060008060008060608789031215610a8557600080fd5b86356001600160401b03811115610a9b57600080fd5b610aa789828a01610a21565b90975095505060208701356001600160401b03811115610ac657600080fd5b610ad289828a01610a21565b90955093505060408701356001600160401b03811115610af157600080fd5b610afd89828a01610a21565b979a9699509497509295939492505050565b602080825282518282018190526000918401906040840190835b81811015610b47578351835260209384019390920191600101610b29565b509095945050505050565b60008060008060008060008060008060a08b8d031215610b7157600080fd5b8a356001600160401b03811115610b8757600080fd5b610b938d828e01610a21565b909b5099505060208b01356001600160401b03811115610bb257600080fd5b610bbe8d828e01610a21565b90995097505060408b01356001600160401b03811115610bdd57600080fd5b610be98d828e01610a21565b90975095505060608b01356001600160401b03811115610c0857600080fd5b610c148d828e01610a21565b90955093505060808b01356001600160401b03811115610c3357600080fd5b610c3f8d828e01610a21565b915080935050809150509295989b9194979a5092959850565b600060208284031215610c6a57600080fd5b5035919050565b80356001600160401b0381168114610c8857600080fd5b919050565b60008060408385031215610ca057600080fd5b82359150610cb060208401610c71565b90509250929050565b600080600060608486031215610cce57600080fd5b83359250610cde60208501610c71565b929592945050506040919091013590565b60008060008060408587031215610d0557600080fd5b84356001600160401b03811115610d1b57600080fd5b610d2787828801610a21565b90955093505060208501356001600160401b03811115610d4657600080fd5b610d5287828801610a21565b95989497509550505050565b634e487b7160e01b600052604160045260246000fd5b634e487b7160e01b600052603260045260246000fd5b600060208284031215610d9c57600080fd5b6106a282610c71565b6000808335601e19843603018112610dbc57600080fd5b8301803591506001600160401b03821115610dd657600080fd5b602001915036819003821315610a6557600080fd5b600060208284031215610dfd57600080fd5b813560ff811681146106a257600080fd5b600060208284031215610e2057600080fd5b813563ffffffff811681146106a257600080fd5b81835281816020850137506000828201602090810191909152601f909101601f19169091010190565b608081526000610e7160808301888a610e34565b8281036020840152610e84818789610e34565b91505060ff8416604083015263ffffffff83166060830152979650505050505050565b81810381811115610ec857634e487b7160e01b600052601160045260246000fd5b9291505056fea2646970667358221220dcb370d8501b2d83128583482a18fe8139fa49b6d0346690d832cc7620c85e2f64736f6c63430008250033",
}

// ProjectStateAnchorABI is the input ABI used to generate the binding from.
// Deprecated: Use ProjectStateAnchorMetaData.ABI instead.
var ProjectStateAnchorABI = ProjectStateAnchorMetaData.ABI

// ProjectStateAnchorBin is the compiled bytecode used for deploying new contracts.
// Deprecated: Use ProjectStateAnchorMetaData.Bin instead.
var ProjectStateAnchorBin = ProjectStateAnchorMetaData.Bin

// DeployProjectStateAnchor deploys a new Ethereum contract, binding an instance of ProjectStateAnchor to it.
func DeployProjectStateAnchor(auth *bind.TransactOpts, backend bind.ContractBackend) (common.Address, *types.Transaction, *ProjectStateAnchor, error) {
	parsed, err := ProjectStateAnchorMetaData.GetAbi()
	if err != nil {
		return common.Address{}, nil, nil, err
	}
	if parsed == nil {
		return common.Address{}, nil, nil, errors.New("GetABI returned nil")
	}

	address, tx, contract, err := bind.DeployContract(auth, *parsed, common.FromHex(ProjectStateAnchorBin), backend)
	if err != nil {
		return common.Address{}, nil, nil, err
	}
	return address, tx, &ProjectStateAnchor{ProjectStateAnchorCaller: ProjectStateAnchorCaller{contract: contract}, ProjectStateAnchorTransactor: ProjectStateAnchorTransactor{contract: contract}, ProjectStateAnchorFilterer: ProjectStateAnchorFilterer{contract: contract}}, nil
}

// ProjectStateAnchor is an auto generated Go binding around an Ethereum contract.
type ProjectStateAnchor struct {
	ProjectStateAnchorCaller     // Read-only binding to the contract
	ProjectStateAnchorTransactor // Write-only binding to the contract
	ProjectStateAnchorFilterer   // Log filterer for contract events
}

// ProjectStateAnchorCaller is an auto generated read-only Go binding around an Ethereum contract.
type ProjectStateAnchorCaller struct {
	contract *bind.BoundContract // Generic contract wrapper for the low level calls
}

// ProjectStateAnchorTransactor is an auto generated write-only Go binding around an Ethereum contract.
type ProjectStateAnchorTransactor struct {
	contract *bind.BoundContract // Generic contract wrapper for the low level calls
}

// ProjectStateAnchorFilterer is an auto generated log filtering Go binding around an Ethereum contract events.
type ProjectStateAnchorFilterer struct {
	contract *bind.BoundContract // Generic contract wrapper for the low level calls
}

// ProjectStateAnchorSession is an auto generated Go binding around an Ethereum contract,
// with pre-set call and transact options.
type ProjectStateAnchorSession struct {
	Contract     *ProjectStateAnchor // Generic contract binding to set the session for
	CallOpts     bind.CallOpts       // Call options to use throughout this session
	TransactOpts bind.TransactOpts   // Transaction auth options to use throughout this session
}

// ProjectStateAnchorCallerSession is an auto generated read-only Go binding around an Ethereum contract,
// with pre-set call options.
type ProjectStateAnchorCallerSession struct {
	Contract *ProjectStateAnchorCaller // Generic contract caller binding to set the session for
	CallOpts bind.CallOpts             // Call options to use throughout this session
}

// ProjectStateAnchorTransactorSession is an auto generated write-only Go binding around an Ethereum contract,
// with pre-set transact options.
type ProjectStateAnchorTransactorSession struct {
	Contract     *ProjectStateAnchorTransactor // Generic contract transactor binding to set the session for
	TransactOpts bind.TransactOpts             // Transaction auth options to use throughout this session
}

// ProjectStateAnchorRaw is an auto generated low-level Go binding around an Ethereum contract.
type ProjectStateAnchorRaw struct {
	Contract *ProjectStateAnchor // Generic contract binding to access the raw methods on
}

// ProjectStateAnchorCallerRaw is an auto generated low-level read-only Go binding around an Ethereum contract.
type ProjectStateAnchorCallerRaw struct {
	Contract *ProjectStateAnchorCaller // Generic read-only contract binding to access the raw methods on
}

// ProjectStateAnchorTransactorRaw is an auto generated low-level write-only Go binding around an Ethereum contract.
type ProjectStateAnchorTransactorRaw struct {
	Contract *ProjectStateAnchorTransactor // Generic write-only contract binding to access the raw methods on
}

// NewProjectStateAnchor creates a new instance of ProjectStateAnchor, bound to a specific deployed contract.
func NewProjectStateAnchor(address common.Address, backend bind.ContractBackend) (*ProjectStateAnchor, error) {
	contract, err := bindProjectStateAnchor(address, backend, backend, backend)
	if err != nil {
		return nil, err
	}
	return &ProjectStateAnchor{ProjectStateAnchorCaller: ProjectStateAnchorCaller{contract: contract}, ProjectStateAnchorTransactor: ProjectStateAnchorTransactor{contract: contract}, ProjectStateAnchorFilterer: ProjectStateAnchorFilterer{contract: contract}}, nil
}

// NewProjectStateAnchorCaller creates a new read-only instance of ProjectStateAnchor, bound to a specific deployed contract.
func NewProjectStateAnchorCaller(address common.Address, caller bind.ContractCaller) (*ProjectStateAnchorCaller, error) {
	contract, err := bindProjectStateAnchor(address, caller, nil, nil)
	if err != nil {
		return nil, err
	}
	return &ProjectStateAnchorCaller{contract: contract}, nil
}

// NewProjectStateAnchorTransactor creates a new write-only instance of ProjectStateAnchor, bound to a specific deployed contract.
func NewProjectStateAnchorTransactor(address common.Address, transactor bind.ContractTransactor) (*ProjectStateAnchorTransactor, error) {
	contract, err := bindProjectStateAnchor(address, nil, transactor, nil)
	if err != nil {
		return nil, err
	}
	return &ProjectStateAnchorTransactor{contract: contract}, nil
}

// NewProjectStateAnchorFilterer creates a new log filterer instance of ProjectStateAnchor, bound to a specific deployed contract.
func NewProjectStateAnchorFilterer(address common.Address, filterer bind.ContractFilterer) (*ProjectStateAnchorFilterer, error) {
	contract, err := bindProjectStateAnchor(address, nil, nil, filterer)
	if err != nil {
		return nil, err
	}
	return &ProjectStateAnchorFilterer{contract: contract}, nil
}

// bindProjectStateAnchor binds a generic wrapper to an already deployed contract.
func bindProjectStateAnchor(address common.Address, caller bind.ContractCaller, transactor bind.ContractTransactor, filterer bind.ContractFilterer) (*bind.BoundContract, error) {
	parsed, err := ProjectStateAnchorMetaData.GetAbi()
	if err != nil {
		return nil, err
	}
	return bind.NewBoundContract(address, *parsed, caller, transactor, filterer), nil
}

// Call invokes the (constant) contract method with params as input values and
// sets the output to result. The result type might be a single field for simple
// returns, a slice of interfaces for anonymous returns and a struct for named
// returns.
func (_ProjectStateAnchor *ProjectStateAnchorRaw) Call(opts *bind.CallOpts, result *[]interface{}, method string, params ...interface{}) error {
	return _ProjectStateAnchor.Contract.ProjectStateAnchorCaller.contract.Call(opts, result, method, params...)
}

// Transfer initiates a plain transaction to move funds to the contract, calling
// its default method if one is available.
func (_ProjectStateAnchor *ProjectStateAnchorRaw) Transfer(opts *bind.TransactOpts) (*types.Transaction, error) {
	return _ProjectStateAnchor.Contract.ProjectStateAnchorTransactor.contract.Transfer(opts)
}

// Transact invokes the (paid) contract method with params as input values.
func (_ProjectStateAnchor *ProjectStateAnchorRaw) Transact(opts *bind.TransactOpts, method string, params ...interface{}) (*types.Transaction, error) {
	return _ProjectStateAnchor.Contract.ProjectStateAnchorTransactor.contract.Transact(opts, method, params...)
}

// Call invokes the (constant) contract method with params as input values and
// sets the output to result. The result type might be a single field for simple
// returns, a slice of interfaces for anonymous returns and a struct for named
// returns.
func (_ProjectStateAnchor *ProjectStateAnchorCallerRaw) Call(opts *bind.CallOpts, result *[]interface{}, method string, params ...interface{}) error {
	return _ProjectStateAnchor.Contract.contract.Call(opts, result, method, params...)
}

// Transfer initiates a plain transaction to move funds to the contract, calling
// its default method if one is available.
func (_ProjectStateAnchor *ProjectStateAnchorTransactorRaw) Transfer(opts *bind.TransactOpts) (*types.Transaction, error) {
	return _ProjectStateAnchor.Contract.contract.Transfer(opts)
}

// Transact invokes the (paid) contract method with params as input values.
func (_ProjectStateAnchor *ProjectStateAnchorTransactorRaw) Transact(opts *bind.TransactOpts, method string, params ...interface{}) (*types.Transaction, error) {
	return _ProjectStateAnchor.Contract.contract.Transact(opts, method, params...)
}

// AnchorCount is a free data retrieval call binding the contract method 0x34f96c8c.
//
// Solidity: function anchorCount() view returns(uint256)
func (_ProjectStateAnchor *ProjectStateAnchorCaller) AnchorCount(opts *bind.CallOpts) (*big.Int, error) {
	var out []interface{}
	err := _ProjectStateAnchor.contract.Call(opts, &out, "anchorCount")

	if err != nil {
		return *new(*big.Int), err
	}

	out0 := *abi.ConvertType(out[0], new(*big.Int)).(**big.Int)

	return out0, err

}

// AnchorCount is a free data retrieval call binding the contract method 0x34f96c8c.
//
// Solidity: function anchorCount() view returns(uint256)
func (_ProjectStateAnchor *ProjectStateAnchorSession) AnchorCount() (*big.Int, error) {
	return _ProjectStateAnchor.Contract.AnchorCount(&_ProjectStateAnchor.CallOpts)
}

// AnchorCount is a free data retrieval call binding the contract method 0x34f96c8c.
//
// Solidity: function anchorCount() view returns(uint256)
func (_ProjectStateAnchor *ProjectStateAnchorCallerSession) AnchorCount() (*big.Int, error) {
	return _ProjectStateAnchor.Contract.AnchorCount(&_ProjectStateAnchor.CallOpts)
}

// GetAnchor is a free data retrieval call binding the contract method 0x6a9fc0b2.
//
// Solidity: function getAnchor(bytes32 projectId, uint64 version) view returns(uint256 anchorId, bytes32 anchoredProjectId, uint64 anchoredVersion, bytes32 stateHash, uint64 anchoredAt, address anchoredBy)
func (_ProjectStateAnchor *ProjectStateAnchorCaller) GetAnchor(opts *bind.CallOpts, projectId [32]byte, version uint64) (struct {
	AnchorId          *big.Int
	AnchoredProjectId [32]byte
	AnchoredVersion   uint64
	StateHash         [32]byte
	AnchoredAt        uint64
	AnchoredBy        common.Address
}, error) {
	var out []interface{}
	err := _ProjectStateAnchor.contract.Call(opts, &out, "getAnchor", projectId, version)

	outstruct := new(struct {
		AnchorId          *big.Int
		AnchoredProjectId [32]byte
		AnchoredVersion   uint64
		StateHash         [32]byte
		AnchoredAt        uint64
		AnchoredBy        common.Address
	})
	if err != nil {
		return *outstruct, err
	}

	outstruct.AnchorId = *abi.ConvertType(out[0], new(*big.Int)).(**big.Int)
	outstruct.AnchoredProjectId = *abi.ConvertType(out[1], new([32]byte)).(*[32]byte)
	outstruct.AnchoredVersion = *abi.ConvertType(out[2], new(uint64)).(*uint64)
	outstruct.StateHash = *abi.ConvertType(out[3], new([32]byte)).(*[32]byte)
	outstruct.AnchoredAt = *abi.ConvertType(out[4], new(uint64)).(*uint64)
	outstruct.AnchoredBy = *abi.ConvertType(out[5], new(common.Address)).(*common.Address)

	return *outstruct, err

}

// GetAnchor is a free data retrieval call binding the contract method 0x6a9fc0b2.
//
// Solidity: function getAnchor(bytes32 projectId, uint64 version) view returns(uint256 anchorId, bytes32 anchoredProjectId, uint64 anchoredVersion, bytes32 stateHash, uint64 anchoredAt, address anchoredBy)
func (_ProjectStateAnchor *ProjectStateAnchorSession) GetAnchor(projectId [32]byte, version uint64) (struct {
	AnchorId          *big.Int
	AnchoredProjectId [32]byte
	AnchoredVersion   uint64
	StateHash         [32]byte
	AnchoredAt        uint64
	AnchoredBy        common.Address
}, error) {
	return _ProjectStateAnchor.Contract.GetAnchor(&_ProjectStateAnchor.CallOpts, projectId, version)
}

// GetAnchor is a free data retrieval call binding the contract method 0x6a9fc0b2.
//
// Solidity: function getAnchor(bytes32 projectId, uint64 version) view returns(uint256 anchorId, bytes32 anchoredProjectId, uint64 anchoredVersion, bytes32 stateHash, uint64 anchoredAt, address anchoredBy)
func (_ProjectStateAnchor *ProjectStateAnchorCallerSession) GetAnchor(projectId [32]byte, version uint64) (struct {
	AnchorId          *big.Int
	AnchoredProjectId [32]byte
	AnchoredVersion   uint64
	StateHash         [32]byte
	AnchoredAt        uint64
	AnchoredBy        common.Address
}, error) {
	return _ProjectStateAnchor.Contract.GetAnchor(&_ProjectStateAnchor.CallOpts, projectId, version)
}

// GetAnchorById is a free data retrieval call binding the contract method 0x32bf361b.
//
// Solidity: function getAnchorById(uint256 anchorId) view returns(bytes32 projectId, uint64 version, bytes32 stateHash, uint64 anchoredAt, address anchoredBy)
func (_ProjectStateAnchor *ProjectStateAnchorCaller) GetAnchorById(opts *bind.CallOpts, anchorId *big.Int) (struct {
	ProjectId  [32]byte
	Version    uint64
	StateHash  [32]byte
	AnchoredAt uint64
	AnchoredBy common.Address
}, error) {
	var out []interface{}
	err := _ProjectStateAnchor.contract.Call(opts, &out, "getAnchorById", anchorId)

	outstruct := new(struct {
		ProjectId  [32]byte
		Version    uint64
		StateHash  [32]byte
		AnchoredAt uint64
		AnchoredBy common.Address
	})
	if err != nil {
		return *outstruct, err
	}

	outstruct.ProjectId = *abi.ConvertType(out[0], new([32]byte)).(*[32]byte)
	outstruct.Version = *abi.ConvertType(out[1], new(uint64)).(*uint64)
	outstruct.StateHash = *abi.ConvertType(out[2], new([32]byte)).(*[32]byte)
	outstruct.AnchoredAt = *abi.ConvertType(out[3], new(uint64)).(*uint64)
	outstruct.AnchoredBy = *abi.ConvertType(out[4], new(common.Address)).(*common.Address)

	return *outstruct, err

}

// GetAnchorById is a free data retrieval call binding the contract method 0x32bf361b.
//
// Solidity: function getAnchorById(uint256 anchorId) view returns(bytes32 projectId, uint64 version, bytes32 stateHash, uint64 anchoredAt, address anchoredBy)
func (_ProjectStateAnchor *ProjectStateAnchorSession) GetAnchorById(anchorId *big.Int) (struct {
	ProjectId  [32]byte
	Version    uint64
	StateHash  [32]byte
	AnchoredAt uint64
	AnchoredBy common.Address
}, error) {
	return _ProjectStateAnchor.Contract.GetAnchorById(&_ProjectStateAnchor.CallOpts, anchorId)
}

// GetAnchorById is a free data retrieval call binding the contract method 0x32bf361b.
//
// Solidity: function getAnchorById(uint256 anchorId) view returns(bytes32 projectId, uint64 version, bytes32 stateHash, uint64 anchoredAt, address anchoredBy)
func (_ProjectStateAnchor *ProjectStateAnchorCallerSession) GetAnchorById(anchorId *big.Int) (struct {
	ProjectId  [32]byte
	Version    uint64
	StateHash  [32]byte
	AnchoredAt uint64
	AnchoredBy common.Address
}, error) {
	return _ProjectStateAnchor.Contract.GetAnchorById(&_ProjectStateAnchor.CallOpts, anchorId)
}

// GetAnchorIds is a free data retrieval call binding the contract method 0xc74f76dd.
//
// Solidity: function getAnchorIds(bytes32[] projectIds, uint64[] versions) view returns(uint256[] anchorIds)
func (_ProjectStateAnchor *ProjectStateAnchorCaller) GetAnchorIds(opts *bind.CallOpts, projectIds [][32]byte, versions []uint64) ([]*big.Int, error) {
	var out []interface{}
	err := _ProjectStateAnchor.contract.Call(opts, &out, "getAnchorIds", projectIds, versions)

	if err != nil {
		return *new([]*big.Int), err
	}

	out0 := *abi.ConvertType(out[0], new([]*big.Int)).(*[]*big.Int)

	return out0, err

}

// GetAnchorIds is a free data retrieval call binding the contract method 0xc74f76dd.
//
// Solidity: function getAnchorIds(bytes32[] projectIds, uint64[] versions) view returns(uint256[] anchorIds)
func (_ProjectStateAnchor *ProjectStateAnchorSession) GetAnchorIds(projectIds [][32]byte, versions []uint64) ([]*big.Int, error) {
	return _ProjectStateAnchor.Contract.GetAnchorIds(&_ProjectStateAnchor.CallOpts, projectIds, versions)
}

// GetAnchorIds is a free data retrieval call binding the contract method 0xc74f76dd.
//
// Solidity: function getAnchorIds(bytes32[] projectIds, uint64[] versions) view returns(uint256[] anchorIds)
func (_ProjectStateAnchor *ProjectStateAnchorCallerSession) GetAnchorIds(projectIds [][32]byte, versions []uint64) ([]*big.Int, error) {
	return _ProjectStateAnchor.Contract.GetAnchorIds(&_ProjectStateAnchor.CallOpts, projectIds, versions)
}

// Owner is a free data retrieval call binding the contract method 0x8da5cb5b.
//
// Solidity: function owner() view returns(address)
func (_ProjectStateAnchor *ProjectStateAnchorCaller) Owner(opts *bind.CallOpts) (common.Address, error) {
	var out []interface{}
	err := _ProjectStateAnchor.contract.Call(opts, &out, "owner")

	if err != nil {
		return *new(common.Address), err
	}

	out0 := *abi.ConvertType(out[0], new(common.Address)).(*common.Address)

	return out0, err

}

// Owner is a free data retrieval call binding the contract method 0x8da5cb5b.
//
// Solidity: function owner() view returns(address)
func (_ProjectStateAnchor *ProjectStateAnchorSession) Owner() (common.Address, error) {
	return _ProjectStateAnchor.Contract.Owner(&_ProjectStateAnchor.CallOpts)
}

// Owner is a free data retrieval call binding the contract method 0x8da5cb5b.
//
// Solidity: function owner() view returns(address)
func (_ProjectStateAnchor *ProjectStateAnchorCallerSession) Owner() (common.Address, error) {
	return _ProjectStateAnchor.Contract.Owner(&_ProjectStateAnchor.CallOpts)
}

// Anchor is a paid mutator transaction binding the contract method 0x70c127c6.
//
// Solidity: function anchor(bytes32 projectId, uint64 version, bytes32 stateHash) returns(uint256 anchorId)
func (_ProjectStateAnchor *ProjectStateAnchorTransactor) Anchor(opts *bind.TransactOpts, projectId [32]byte, version uint64, stateHash [32]byte) (*types.Transaction, error) {
	return _ProjectStateAnchor.contract.Transact(opts, "anchor", projectId, version, stateHash)
}

// Anchor is a paid mutator transaction binding the contract method 0x70c127c6.
//
// Solidity: function anchor(bytes32 projectId, uint64 version, bytes32 stateHash) returns(uint256 anchorId)
func (_ProjectStateAnchor *ProjectStateAnchorSession) Anchor(projectId [32]byte, version uint64, stateHash [32]byte) (*types.Transaction, error) {
	return _ProjectStateAnchor.Contract.Anchor(&_ProjectStateAnchor.TransactOpts, projectId, version, stateHash)
}

// Anchor is a paid mutator transaction binding the contract method 0x70c127c6.
//
// Solidity: function anchor(bytes32 projectId, uint64 version, bytes32 stateHash) returns(uint256 anchorId)
func (_ProjectStateAnchor *ProjectStateAnchorTransactorSession) Anchor(projectId [32]byte, version uint64, stateHash [32]byte) (*types.Transaction, error) {
	return _ProjectStateAnchor.Contract.Anchor(&_ProjectStateAnchor.TransactOpts, projectId, version, stateHash)
}

// AnchorBatch is a paid mutator transaction binding the contract method 0x14013038.
//
// Solidity: function anchorBatch(bytes32[] projectIds, uint64[] versions, bytes32[] stateHashes) returns(uint256[] anchorIds)
func (_ProjectStateAnchor *ProjectStateAnchorTransactor) AnchorBatch(opts *bind.TransactOpts, projectIds [][32]byte, versions []uint64, stateHashes [][32]byte) (*types.Transaction, error) {
	return _ProjectStateAnchor.contract.Transact(opts, "anchorBatch", projectIds, versions, stateHashes)
}

// AnchorBatch is a paid mutator transaction binding the contract method 0x14013038.
//
// Solidity: function anchorBatch(bytes32[] projectIds, uint64[] versions, bytes32[] stateHashes) returns(uint256[] anchorIds)
func (_ProjectStateAnchor *ProjectStateAnchorSession) AnchorBatch(projectIds [][32]byte, versions []uint64, stateHashes [][32]byte) (*types.Transaction, error) {
	return _ProjectStateAnchor.Contract.AnchorBatch(&_ProjectStateAnchor.TransactOpts, projectIds, versions, stateHashes)
}

// AnchorBatch is a paid mutator transaction binding the contract method 0x14013038.
//
// Solidity: function anchorBatch(bytes32[] projectIds, uint64[] versions, bytes32[] stateHashes) returns(uint256[] anchorIds)
func (_ProjectStateAnchor *ProjectStateAnchorTransactorSession) AnchorBatch(projectIds [][32]byte, versions []uint64, stateHashes [][32]byte) (*types.Transaction, error) {
	return _ProjectStateAnchor.Contract.AnchorBatch(&_ProjectStateAnchor.TransactOpts, projectIds, versions, stateHashes)
}

// AnchorMemories is a paid mutator transaction binding the contract method 0x2a1a34c6.
//
// Solidity: function anchorMemories(bytes32[] eventHashes, bytes[] encryptedContents, string[] categories, uint8[] importances, uint32[] plainLengths) returns()
func (_ProjectStateAnchor *ProjectStateAnchorTransactor) AnchorMemories(opts *bind.TransactOpts, eventHashes [][32]byte, encryptedContents [][]byte, categories []string, importances []uint8, plainLengths []uint32) (*types.Transaction, error) {
	return _ProjectStateAnchor.contract.Transact(opts, "anchorMemories", eventHashes, encryptedContents, categories, importances, plainLengths)
}

// AnchorMemories is a paid mutator transaction binding the contract method 0x2a1a34c6.
//
// Solidity: function anchorMemories(bytes32[] eventHashes, bytes[] encryptedContents, string[] categories, uint8[] importances, uint32[] plainLengths) returns()
func (_ProjectStateAnchor *ProjectStateAnchorSession) AnchorMemories(eventHashes [][32]byte, encryptedContents [][]byte, categories []string, importances []uint8, plainLengths []uint32) (*types.Transaction, error) {
	return _ProjectStateAnchor.Contract.AnchorMemories(&_ProjectStateAnchor.TransactOpts, eventHashes, encryptedContents, categories, importances, plainLengths)
}

// AnchorMemories is a paid mutator transaction binding the contract method 0x2a1a34c6.
//
// Solidity: function anchorMemories(bytes32[] eventHashes, bytes[] encryptedContents, string[] categories, uint8[] importances, uint32[] plainLengths) returns()
func (_ProjectStateAnchor *ProjectStateAnchorTransactorSession) AnchorMemories(eventHashes [][32]byte, encryptedContents [][]byte, categories []string, importances []uint8, plainLengths []uint32) (*types.Transaction, error) {
	return _ProjectStateAnchor.Contract.AnchorMemories(&_ProjectStateAnchor.TransactOpts, eventHashes, encryptedContents, categories, importances, plainLengths)
}

// ProjectStateAnchorMemoryAnchoredIterator is returned from FilterMemoryAnchored and is used to iterate over the raw logs and unpacked data for MemoryAnchored events raised by the ProjectStateAnchor contract.
type ProjectStateAnchorMemoryAnchoredIterator struct {
	Event *ProjectStateAnchorMemoryAnchored // Event containing the contract specifics and raw log

	contract *bind.BoundContract // Generic contract to use for unpacking event data
	event    string              // Event name to use for unpacking event data

	logs chan types.Log        // Log channel receiving the found contract events
	sub  ethereum.Subscription // Subscription for errors, completion and termination
	done bool                  // Whether the subscription completed delivering logs
	fail error                 // Occurred error to stop iteration
}

// Next advances the iterator to the subsequent event, returning whether there
// are any more events found. In case of a retrieval or parsing error, false is
// returned and Error() can be queried for the exact failure.
func (it *ProjectStateAnchorMemoryAnchoredIterator) Next() bool {
	// If the iterator failed, stop iterating
	if it.fail != nil {
		return false
	}
	// If the iterator completed, deliver directly whatever's available
	if it.done {
		select {
		case log := <-it.logs:
			it.Event = new(ProjectStateAnchorMemoryAnchored)
			if err := it.contract.UnpackLog(it.Event, it.event, log); err != nil {
				it.fail = err
				return false
			}
			it.Event.Raw = log
			return true

		default:
			return false
		}
	}
	// Iterator still in progress, wait for either a data or an error event
	select {
	case log := <-it.logs:
		it.Event = new(ProjectStateAnchorMemoryAnchored)
		if err := it.contract.UnpackLog(it.Event, it.event, log); err != nil {
			it.fail = err
			return false
		}
		it.Event.Raw = log
		return true

	case err := <-it.sub.Err():
		it.done = true
		it.fail = err
		return it.Next()
	}
}

// Error returns any retrieval or parsing error occurred during filtering.
func (it *ProjectStateAnchorMemoryAnchoredIterator) Error() error {
	return it.fail
}

// Close terminates the iteration process, releasing any pending underlying
// resources.
func (it *ProjectStateAnchorMemoryAnchoredIterator) Close() error {
	it.sub.Unsubscribe()
	return nil
}

// ProjectStateAnchorMemoryAnchored represents a MemoryAnchored event raised by the ProjectStateAnchor contract.
type ProjectStateAnchorMemoryAnchored struct {
	EventHash        [32]byte
	EncryptedContent []byte
	Category         string
	Importance       uint8
	PlainLength      uint32
	Raw              types.Log // Blockchain specific contextual infos
}

// FilterMemoryAnchored is a free log retrieval operation binding the contract event 0xa9019c351a56d141f0ad483800c02fcf210cc18e522126dce76273559a45101c.
//
// Solidity: event MemoryAnchored(bytes32 indexed eventHash, bytes encryptedContent, string category, uint8 importance, uint32 plainLength)
func (_ProjectStateAnchor *ProjectStateAnchorFilterer) FilterMemoryAnchored(opts *bind.FilterOpts, eventHash [][32]byte) (*ProjectStateAnchorMemoryAnchoredIterator, error) {

	var eventHashRule []interface{}
	for _, eventHashItem := range eventHash {
		eventHashRule = append(eventHashRule, eventHashItem)
	}

	logs, sub, err := _ProjectStateAnchor.contract.FilterLogs(opts, "MemoryAnchored", eventHashRule)
	if err != nil {
		return nil, err
	}
	return &ProjectStateAnchorMemoryAnchoredIterator{contract: _ProjectStateAnchor.contract, event: "MemoryAnchored", logs: logs, sub: sub}, nil
}

// WatchMemoryAnchored is a free log subscription operation binding the contract event 0xa9019c351a56d141f0ad483800c02fcf210cc18e522126dce76273559a45101c.
//
// Solidity: event MemoryAnchored(bytes32 indexed eventHash, bytes encryptedContent, string category, uint8 importance, uint32 plainLength)
func (_ProjectStateAnchor *ProjectStateAnchorFilterer) WatchMemoryAnchored(opts *bind.WatchOpts, sink chan<- *ProjectStateAnchorMemoryAnchored, eventHash [][32]byte) (event.Subscription, error) {

	var eventHashRule []interface{}
	for _, eventHashItem := range eventHash {
		eventHashRule = append(eventHashRule, eventHashItem)
	}

	logs, sub, err := _ProjectStateAnchor.contract.WatchLogs(opts, "MemoryAnchored", eventHashRule)
	if err != nil {
		return nil, err
	}
	return event.NewSubscription(func(quit <-chan struct{}) error {
		defer sub.Unsubscribe()
		for {
			select {
			case log := <-logs:
				// New log arrived, parse the event and forward to the user
				event := new(ProjectStateAnchorMemoryAnchored)
				if err := _ProjectStateAnchor.contract.UnpackLog(event, "MemoryAnchored", log); err != nil {
					// If the signature doesn't match, skip this log.
					if errors.Is(err, bind.ErrEventSignatureMismatch) {
						continue
					}
					return err
				}
				event.Raw = log

				select {
				case sink <- event:
				case err := <-sub.Err():
					return err
				case <-quit:
					return nil
				}
			case err := <-sub.Err():
				return err
			case <-quit:
				return nil
			}
		}
	}), nil
}

// ParseMemoryAnchored is a log parse operation binding the contract event 0xa9019c351a56d141f0ad483800c02fcf210cc18e522126dce76273559a45101c.
//
// Solidity: event MemoryAnchored(bytes32 indexed eventHash, bytes encryptedContent, string category, uint8 importance, uint32 plainLength)
func (_ProjectStateAnchor *ProjectStateAnchorFilterer) ParseMemoryAnchored(log types.Log) (*ProjectStateAnchorMemoryAnchored, error) {
	event := new(ProjectStateAnchorMemoryAnchored)
	if err := _ProjectStateAnchor.contract.UnpackLog(event, "MemoryAnchored", log); err != nil {
		return nil, err
	}
	event.Raw = log
	return event, nil
}

// ProjectStateAnchorStateAnchoredIterator is returned from FilterStateAnchored and is used to iterate over the raw logs and unpacked data for StateAnchored events raised by the ProjectStateAnchor contract.
type ProjectStateAnchorStateAnchoredIterator struct {
	Event *ProjectStateAnchorStateAnchored // Event containing the contract specifics and raw log

	contract *bind.BoundContract // Generic contract to use for unpacking event data
	event    string              // Event name to use for unpacking event data

	logs chan types.Log        // Log channel receiving the found contract events
	sub  ethereum.Subscription // Subscription for errors, completion and termination
	done bool                  // Whether the subscription completed delivering logs
	fail error                 // Occurred error to stop iteration
}

// Next advances the iterator to the subsequent event, returning whether there
// are any more events found. In case of a retrieval or parsing error, false is
// returned and Error() can be queried for the exact failure.
func (it *ProjectStateAnchorStateAnchoredIterator) Next() bool {
	// If the iterator failed, stop iterating
	if it.fail != nil {
		return false
	}
	// If the iterator completed, deliver directly whatever's available
	if it.done {
		select {
		case log := <-it.logs:
			it.Event = new(ProjectStateAnchorStateAnchored)
			if err := it.contract.UnpackLog(it.Event, it.event, log); err != nil {
				it.fail = err
				return false
			}
			it.Event.Raw = log
			return true

		default:
			return false
		}
	}
	// Iterator still in progress, wait for either a data or an error event
	select {
	case log := <-it.logs:
		it.Event = new(ProjectStateAnchorStateAnchored)
		if err := it.contract.UnpackLog(it.Event, it.event, log); err != nil {
			it.fail = err
			return false
		}
		it.Event.Raw = log
		return true

	case err := <-it.sub.Err():
		it.done = true
		it.fail = err
		return it.Next()
	}
}

// Error returns any retrieval or parsing error occurred during filtering.
func (it *ProjectStateAnchorStateAnchoredIterator) Error() error {
	return it.fail
}

// Close terminates the iteration process, releasing any pending underlying
// resources.
func (it *ProjectStateAnchorStateAnchoredIterator) Close() error {
	it.sub.Unsubscribe()
	return nil
}

// ProjectStateAnchorStateAnchored represents a StateAnchored event raised by the ProjectStateAnchor contract.
type ProjectStateAnchorStateAnchored struct {
	AnchorId  *big.Int
	ProjectId [32]byte
	Version   uint64
	StateHash [32]byte
	Raw       types.Log // Blockchain specific contextual infos
}

// FilterStateAnchored is a free log retrieval operation binding the contract event 0xe4f1c210561f4a81f98d15ba49271649afe260b05099568c25c46e593b7aa013.
//
// Solidity: event StateAnchored(uint256 indexed anchorId, bytes32 indexed projectId, uint64 version, bytes32 stateHash)
func (_ProjectStateAnchor *ProjectStateAnchorFilterer) FilterStateAnchored(opts *bind.FilterOpts, anchorId []*big.Int, projectId [][32]byte) (*ProjectStateAnchorStateAnchoredIterator, error) {

	var anchorIdRule []interface{}
	for _, anchorIdItem := range anchorId {
		anchorIdRule = append(anchorIdRule, anchorIdItem)
	}
	var projectIdRule []interface{}
	for _, projectIdItem := range projectId {
		projectIdRule = append(projectIdRule, projectIdItem)
	}

	logs, sub, err := _ProjectStateAnchor.contract.FilterLogs(opts, "StateAnchored", anchorIdRule, projectIdRule)
	if err != nil {
		return nil, err
	}
	return &ProjectStateAnchorStateAnchoredIterator{contract: _ProjectStateAnchor.contract, event: "StateAnchored", logs: logs, sub: sub}, nil
}

// WatchStateAnchored is a free log subscription operation binding the contract event 0xe4f1c210561f4a81f98d15ba49271649afe260b05099568c25c46e593b7aa013.
//
// Solidity: event StateAnchored(uint256 indexed anchorId, bytes32 indexed projectId, uint64 version, bytes32 stateHash)
func (_ProjectStateAnchor *ProjectStateAnchorFilterer) WatchStateAnchored(opts *bind.WatchOpts, sink chan<- *ProjectStateAnchorStateAnchored, anchorId []*big.Int, projectId [][32]byte) (event.Subscription, error) {

	var anchorIdRule []interface{}
	for _, anchorIdItem := range anchorId {
		anchorIdRule = append(anchorIdRule, anchorIdItem)
	}
	var projectIdRule []interface{}
	for _, projectIdItem := range projectId {
		projectIdRule = append(projectIdRule, projectIdItem)
	}

	logs, sub, err := _ProjectStateAnchor.contract.WatchLogs(opts, "StateAnchored", anchorIdRule, projectIdRule)
	if err != nil {
		return nil, err
	}
	return event.NewSubscription(func(quit <-chan struct{}) error {
		defer sub.Unsubscribe()
		for {
			select {
			case log := <-logs:
				// New log arrived, parse the event and forward to the user
				event := new(ProjectStateAnchorStateAnchored)
				if err := _ProjectStateAnchor.contract.UnpackLog(event, "StateAnchored", log); err != nil {
					// If the signature doesn't match, skip this log.
					if errors.Is(err, bind.ErrEventSignatureMismatch) {
						continue
					}
					return err
				}
				event.Raw = log

				select {
				case sink <- event:
				case err := <-sub.Err():
					return err
				case <-quit:
					return nil
				}
			case err := <-sub.Err():
				return err
			case <-quit:
				return nil
			}
		}
	}), nil
}

// ParseStateAnchored is a log parse operation binding the contract event 0xe4f1c210561f4a81f98d15ba49271649afe260b05099568c25c46e593b7aa013.
//
// Solidity: event StateAnchored(uint256 indexed anchorId, bytes32 indexed projectId, uint64 version, bytes32 stateHash)
func (_ProjectStateAnchor *ProjectStateAnchorFilterer) ParseStateAnchored(log types.Log) (*ProjectStateAnchorStateAnchored, error) {
	event := new(ProjectStateAnchorStateAnchored)
	if err := _ProjectStateAnchor.contract.UnpackLog(event, "StateAnchored", log); err != nil {
		return nil, err
	}
	event.Raw = log
	return event, nil
}
