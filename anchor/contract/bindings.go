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
	ABI: "[{\"inputs\":[],\"stateMutability\":\"nonpayable\",\"type\":\"constructor\"},{\"inputs\":[],\"name\":\"LengthMismatch\",\"type\":\"error\"},{\"inputs\":[{\"internalType\":\"address\",\"name\":\"caller\",\"type\":\"address\"}],\"name\":\"NotOwner\",\"type\":\"error\"},{\"inputs\":[],\"name\":\"ZeroCount\",\"type\":\"error\"},{\"inputs\":[],\"name\":\"ZeroRoot\",\"type\":\"error\"},{\"anonymous\":false,\"inputs\":[{\"indexed\":true,\"internalType\":\"bytes32\",\"name\":\"eventHash\",\"type\":\"bytes32\"},{\"indexed\":false,\"internalType\":\"bytes\",\"name\":\"encryptedContent\",\"type\":\"bytes\"},{\"indexed\":false,\"internalType\":\"string\",\"name\":\"category\",\"type\":\"string\"},{\"indexed\":false,\"internalType\":\"uint8\",\"name\":\"importance\",\"type\":\"uint8\"},{\"indexed\":false,\"internalType\":\"uint32\",\"name\":\"plainLength\",\"type\":\"uint32\"}],\"name\":\"MemoryAnchored\",\"type\":\"event\"},{\"anonymous\":false,\"inputs\":[{\"indexed\":true,\"internalType\":\"uint256\",\"name\":\"rootId\",\"type\":\"uint256\"},{\"indexed\":true,\"internalType\":\"bytes32\",\"name\":\"root\",\"type\":\"bytes32\"},{\"indexed\":false,\"internalType\":\"uint32\",\"name\":\"count\",\"type\":\"uint32\"}],\"name\":\"RootAnchored\",\"type\":\"event\"},{\"inputs\":[{\"internalType\":\"bytes32\",\"name\":\"root\",\"type\":\"bytes32\"},{\"internalType\":\"bytes32[]\",\"name\":\"eventHashes\",\"type\":\"bytes32[]\"},{\"internalType\":\"bytes[]\",\"name\":\"encryptedContents\",\"type\":\"bytes[]\"},{\"internalType\":\"string[]\",\"name\":\"categories\",\"type\":\"string[]\"},{\"internalType\":\"uint8[]\",\"name\":\"importances\",\"type\":\"uint8[]\"},{\"internalType\":\"uint32[]\",\"name\":\"plainLengths\",\"type\":\"uint32[]\"}],\"name\":\"anchorMemories\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"rootId\",\"type\":\"uint256\"}],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"bytes32\",\"name\":\"root\",\"type\":\"bytes32\"},{\"internalType\":\"uint32\",\"name\":\"count\",\"type\":\"uint32\"}],\"name\":\"anchorRoot\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"rootId\",\"type\":\"uint256\"}],\"stateMutability\":\"nonpayable\",\"type\":\"function\"},{\"inputs\":[{\"internalType\":\"bytes32\",\"name\":\"root\",\"type\":\"bytes32\"}],\"name\":\"getRoot\",\"outputs\":[{\"internalType\":\"uint256\",\"name\":\"rootId\",\"type\":\"uint256\"},{\"internalType\":\"uint64\",\"name\":\"anchoredAt\",\"type\":\"uint64\"},{\"internalType\":\"uint32\",\"name\":\"count\",\"type\":\"uint32\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"owner\",\"outputs\":[{\"internalType\":\"address\",\"name\":\"\",\"type\":\"address\"}],\"stateMutability\":\"view\",\"type\":\"function\"},{\"inputs\":[],\"name\":\"rootCount\",\"outputs\":[{\"internalType\":\"uint64\",\"name\":\"\",\"type\":\"uint64\"}],\"stateMutability\":\"view\",\"type\":\"function\"}]",
	Bin: "0x60a0604052348015600f57600080fd5b503360805260805161083861003d6000396000818161013201528181610179015261037701526108386000f3fe608060405234801561001057600080fd5b50600436106100575760003560e01c80631188e54b1461005c57806321111bb41461008257806374574eab146100ad57806384f94221146100c05780638da5cb5b1461012d575b600080fd5b61006f61006a366004610553565b61016c565b6040519081526020015b60405180910390f35b600054610095906001600160401b031681565b6040516001600160401b039091168152602001610079565b61006f6100bb36600461067c565b61036a565b6101046100ce3660046106a8565b6000908152600160205260409020546001600160401b0380821692600160401b830490911691600160801b900463ffffffff1690565b604080519384526001600160401b03909216602084015263ffffffff1690820152606001610079565b6101547f000000000000000000000000000000000000000000000000000000000000000081565b6040516001600160a01b039091168152602001610079565b6000336001600160a01b037f000000000000000000000000000000000000000000000000000000000000000016146101be5760405163245aecd360e01b81523360048201526024015b60405180910390fd5b8988811415806101ce5750868114155b806101d95750848114155b806101e45750828114155b806101f2575063ffffffff81115b15610213576040516001621398b960e31b0319815260040160405180910390fd5b60008d8152600160205260409020546001600160401b03161561024f57505060008b8152600160205260409020546001600160401b031661035b565b6102598d826103ca565b915060005b81811015610358578c8c82818110610278576102786106c1565b905060200201357fa9019c351a56d141f0ad483800c02fcf210cc18e522126dce76273559a45101c8c8c848181106102b2576102b26106c1565b90506020028101906102c491906106d7565b8c8c868181106102d6576102d66106c1565b90506020028101906102e891906106d7565b8c8c888181106102fa576102fa6106c1565b905060200201602081019061030f919061071d565b8b8b89818110610321576103216106c1565b90506020020160208101906103369190610747565b6040516103489695949392919061078b565b60405180910390a260010161025e565b50505b9b9a5050505050505050505050565b6000336001600160a01b037f000000000000000000000000000000000000000000000000000000000000000016146103b75760405163245aecd360e01b81523360048201526024016101b5565b6103c183836103ca565b90505b92915050565b6000826103ea5760405163b263ae7360e01b815260040160405180910390fd5b8163ffffffff166000036104115760405163011ee73b60e21b815260040160405180910390fd5b600083815260016020526040902080546001600160401b03161561044057546001600160401b031690506103c4565b60008054610458906001600160401b031660016107d5565b6000805467ffffffffffffffff19166001600160401b0383811691821790925584546fffffffffffffffffffffffffffffffff19168117600160401b42909316929092029190911763ffffffff60801b1916600160801b63ffffffff881690810291909117855560405190815291925086917fe3a84efc575d00cb7416d7846cd945a021d9ea50abadeebe3ca430471eaf56949060200160405180910390a36001600160401b0316949350505050565b60008083601f84011261051a57600080fd5b5081356001600160401b0381111561053157600080fd5b6020830191508360208260051b850101111561054c57600080fd5b9250929050565b600080600080600080600080600080600060c08c8e03121561057457600080fd5b8b359a5060208c01356001600160401b0381111561059157600080fd5b61059d8e828f01610508565b909b5099505060408c01356001600160401b038111156105bc57600080fd5b6105c88e828f01610508565b90995097505060608c01356001600160401b038111156105e757600080fd5b6105f38e828f01610508565b90975095505060808c01356001600160401b0381111561061257600080fd5b61061e8e828f01610508565b90955093505060a08c01356001600160401b0381111561063d57600080fd5b6106498e828f01610508565b915080935050809150509295989b509295989b9093969950565b803563ffffffff8116811461067757600080fd5b919050565b6000806040838503121561068f57600080fd5b8235915061069f60208401610663565b90509250929050565b6000602082840312156106ba57600080fd5b5035919050565b634e487b7160e01b600052603260045260246000fd5b6000808335601e198436030181126106ee57600080fd5b8301803591506001600160401b0382111561070857600080fd5b60200191503681900382131561054c57600080fd5b60006020828403121561072f57600080fd5b813560ff8116811461074057600080fd5b9392505050565b60006020828403121561075957600080fd5b6103c182610663565b81835281816020850137506000828201602090810191909152601f909101601f19169091010190565b60808152600061079f60808301888a610762565b82810360208401526107b2818789610762565b91505060ff8416604083015263ffffffff83166060830152979650505050505050565b6001600160401b0381811683821601908111156103c457634e487b7160e01b600052601160045260246000fdfea2646970667358221220df67587e182c5fc3d3ace42517baf20e7743579b10e2fa553991a8724430e6a264736f6c63430008250033",
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

// GetRoot is a free data retrieval call binding the contract method 0x84f94221.
//
// Solidity: function getRoot(bytes32 root) view returns(uint256 rootId, uint64 anchoredAt, uint32 count)
func (_ProjectStateAnchor *ProjectStateAnchorCaller) GetRoot(opts *bind.CallOpts, root [32]byte) (struct {
	RootId     *big.Int
	AnchoredAt uint64
	Count      uint32
}, error) {
	var out []interface{}
	err := _ProjectStateAnchor.contract.Call(opts, &out, "getRoot", root)

	outstruct := new(struct {
		RootId     *big.Int
		AnchoredAt uint64
		Count      uint32
	})
	if err != nil {
		return *outstruct, err
	}

	outstruct.RootId = *abi.ConvertType(out[0], new(*big.Int)).(**big.Int)
	outstruct.AnchoredAt = *abi.ConvertType(out[1], new(uint64)).(*uint64)
	outstruct.Count = *abi.ConvertType(out[2], new(uint32)).(*uint32)

	return *outstruct, err

}

// GetRoot is a free data retrieval call binding the contract method 0x84f94221.
//
// Solidity: function getRoot(bytes32 root) view returns(uint256 rootId, uint64 anchoredAt, uint32 count)
func (_ProjectStateAnchor *ProjectStateAnchorSession) GetRoot(root [32]byte) (struct {
	RootId     *big.Int
	AnchoredAt uint64
	Count      uint32
}, error) {
	return _ProjectStateAnchor.Contract.GetRoot(&_ProjectStateAnchor.CallOpts, root)
}

// GetRoot is a free data retrieval call binding the contract method 0x84f94221.
//
// Solidity: function getRoot(bytes32 root) view returns(uint256 rootId, uint64 anchoredAt, uint32 count)
func (_ProjectStateAnchor *ProjectStateAnchorCallerSession) GetRoot(root [32]byte) (struct {
	RootId     *big.Int
	AnchoredAt uint64
	Count      uint32
}, error) {
	return _ProjectStateAnchor.Contract.GetRoot(&_ProjectStateAnchor.CallOpts, root)
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

// RootCount is a free data retrieval call binding the contract method 0x21111bb4.
//
// Solidity: function rootCount() view returns(uint64)
func (_ProjectStateAnchor *ProjectStateAnchorCaller) RootCount(opts *bind.CallOpts) (uint64, error) {
	var out []interface{}
	err := _ProjectStateAnchor.contract.Call(opts, &out, "rootCount")

	if err != nil {
		return *new(uint64), err
	}

	out0 := *abi.ConvertType(out[0], new(uint64)).(*uint64)

	return out0, err

}

// RootCount is a free data retrieval call binding the contract method 0x21111bb4.
//
// Solidity: function rootCount() view returns(uint64)
func (_ProjectStateAnchor *ProjectStateAnchorSession) RootCount() (uint64, error) {
	return _ProjectStateAnchor.Contract.RootCount(&_ProjectStateAnchor.CallOpts)
}

// RootCount is a free data retrieval call binding the contract method 0x21111bb4.
//
// Solidity: function rootCount() view returns(uint64)
func (_ProjectStateAnchor *ProjectStateAnchorCallerSession) RootCount() (uint64, error) {
	return _ProjectStateAnchor.Contract.RootCount(&_ProjectStateAnchor.CallOpts)
}

// AnchorMemories is a paid mutator transaction binding the contract method 0x1188e54b.
//
// Solidity: function anchorMemories(bytes32 root, bytes32[] eventHashes, bytes[] encryptedContents, string[] categories, uint8[] importances, uint32[] plainLengths) returns(uint256 rootId)
func (_ProjectStateAnchor *ProjectStateAnchorTransactor) AnchorMemories(opts *bind.TransactOpts, root [32]byte, eventHashes [][32]byte, encryptedContents [][]byte, categories []string, importances []uint8, plainLengths []uint32) (*types.Transaction, error) {
	return _ProjectStateAnchor.contract.Transact(opts, "anchorMemories", root, eventHashes, encryptedContents, categories, importances, plainLengths)
}

// AnchorMemories is a paid mutator transaction binding the contract method 0x1188e54b.
//
// Solidity: function anchorMemories(bytes32 root, bytes32[] eventHashes, bytes[] encryptedContents, string[] categories, uint8[] importances, uint32[] plainLengths) returns(uint256 rootId)
func (_ProjectStateAnchor *ProjectStateAnchorSession) AnchorMemories(root [32]byte, eventHashes [][32]byte, encryptedContents [][]byte, categories []string, importances []uint8, plainLengths []uint32) (*types.Transaction, error) {
	return _ProjectStateAnchor.Contract.AnchorMemories(&_ProjectStateAnchor.TransactOpts, root, eventHashes, encryptedContents, categories, importances, plainLengths)
}

// AnchorMemories is a paid mutator transaction binding the contract method 0x1188e54b.
//
// Solidity: function anchorMemories(bytes32 root, bytes32[] eventHashes, bytes[] encryptedContents, string[] categories, uint8[] importances, uint32[] plainLengths) returns(uint256 rootId)
func (_ProjectStateAnchor *ProjectStateAnchorTransactorSession) AnchorMemories(root [32]byte, eventHashes [][32]byte, encryptedContents [][]byte, categories []string, importances []uint8, plainLengths []uint32) (*types.Transaction, error) {
	return _ProjectStateAnchor.Contract.AnchorMemories(&_ProjectStateAnchor.TransactOpts, root, eventHashes, encryptedContents, categories, importances, plainLengths)
}

// AnchorRoot is a paid mutator transaction binding the contract method 0x74574eab.
//
// Solidity: function anchorRoot(bytes32 root, uint32 count) returns(uint256 rootId)
func (_ProjectStateAnchor *ProjectStateAnchorTransactor) AnchorRoot(opts *bind.TransactOpts, root [32]byte, count uint32) (*types.Transaction, error) {
	return _ProjectStateAnchor.contract.Transact(opts, "anchorRoot", root, count)
}

// AnchorRoot is a paid mutator transaction binding the contract method 0x74574eab.
//
// Solidity: function anchorRoot(bytes32 root, uint32 count) returns(uint256 rootId)
func (_ProjectStateAnchor *ProjectStateAnchorSession) AnchorRoot(root [32]byte, count uint32) (*types.Transaction, error) {
	return _ProjectStateAnchor.Contract.AnchorRoot(&_ProjectStateAnchor.TransactOpts, root, count)
}

// AnchorRoot is a paid mutator transaction binding the contract method 0x74574eab.
//
// Solidity: function anchorRoot(bytes32 root, uint32 count) returns(uint256 rootId)
func (_ProjectStateAnchor *ProjectStateAnchorTransactorSession) AnchorRoot(root [32]byte, count uint32) (*types.Transaction, error) {
	return _ProjectStateAnchor.Contract.AnchorRoot(&_ProjectStateAnchor.TransactOpts, root, count)
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

// ProjectStateAnchorRootAnchoredIterator is returned from FilterRootAnchored and is used to iterate over the raw logs and unpacked data for RootAnchored events raised by the ProjectStateAnchor contract.
type ProjectStateAnchorRootAnchoredIterator struct {
	Event *ProjectStateAnchorRootAnchored // Event containing the contract specifics and raw log

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
func (it *ProjectStateAnchorRootAnchoredIterator) Next() bool {
	// If the iterator failed, stop iterating
	if it.fail != nil {
		return false
	}
	// If the iterator completed, deliver directly whatever's available
	if it.done {
		select {
		case log := <-it.logs:
			it.Event = new(ProjectStateAnchorRootAnchored)
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
		it.Event = new(ProjectStateAnchorRootAnchored)
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
func (it *ProjectStateAnchorRootAnchoredIterator) Error() error {
	return it.fail
}

// Close terminates the iteration process, releasing any pending underlying
// resources.
func (it *ProjectStateAnchorRootAnchoredIterator) Close() error {
	it.sub.Unsubscribe()
	return nil
}

// ProjectStateAnchorRootAnchored represents a RootAnchored event raised by the ProjectStateAnchor contract.
type ProjectStateAnchorRootAnchored struct {
	RootId *big.Int
	Root   [32]byte
	Count  uint32
	Raw    types.Log // Blockchain specific contextual infos
}

// FilterRootAnchored is a free log retrieval operation binding the contract event 0xe3a84efc575d00cb7416d7846cd945a021d9ea50abadeebe3ca430471eaf5694.
//
// Solidity: event RootAnchored(uint256 indexed rootId, bytes32 indexed root, uint32 count)
func (_ProjectStateAnchor *ProjectStateAnchorFilterer) FilterRootAnchored(opts *bind.FilterOpts, rootId []*big.Int, root [][32]byte) (*ProjectStateAnchorRootAnchoredIterator, error) {

	var rootIdRule []interface{}
	for _, rootIdItem := range rootId {
		rootIdRule = append(rootIdRule, rootIdItem)
	}
	var rootRule []interface{}
	for _, rootItem := range root {
		rootRule = append(rootRule, rootItem)
	}

	logs, sub, err := _ProjectStateAnchor.contract.FilterLogs(opts, "RootAnchored", rootIdRule, rootRule)
	if err != nil {
		return nil, err
	}
	return &ProjectStateAnchorRootAnchoredIterator{contract: _ProjectStateAnchor.contract, event: "RootAnchored", logs: logs, sub: sub}, nil
}

// WatchRootAnchored is a free log subscription operation binding the contract event 0xe3a84efc575d00cb7416d7846cd945a021d9ea50abadeebe3ca430471eaf5694.
//
// Solidity: event RootAnchored(uint256 indexed rootId, bytes32 indexed root, uint32 count)
func (_ProjectStateAnchor *ProjectStateAnchorFilterer) WatchRootAnchored(opts *bind.WatchOpts, sink chan<- *ProjectStateAnchorRootAnchored, rootId []*big.Int, root [][32]byte) (event.Subscription, error) {

	var rootIdRule []interface{}
	for _, rootIdItem := range rootId {
		rootIdRule = append(rootIdRule, rootIdItem)
	}
	var rootRule []interface{}
	for _, rootItem := range root {
		rootRule = append(rootRule, rootItem)
	}

	logs, sub, err := _ProjectStateAnchor.contract.WatchLogs(opts, "RootAnchored", rootIdRule, rootRule)
	if err != nil {
		return nil, err
	}
	return event.NewSubscription(func(quit <-chan struct{}) error {
		defer sub.Unsubscribe()
		for {
			select {
			case log := <-logs:
				// New log arrived, parse the event and forward to the user
				event := new(ProjectStateAnchorRootAnchored)
				if err := _ProjectStateAnchor.contract.UnpackLog(event, "RootAnchored", log); err != nil {
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

// ParseRootAnchored is a log parse operation binding the contract event 0xe3a84efc575d00cb7416d7846cd945a021d9ea50abadeebe3ca430471eaf5694.
//
// Solidity: event RootAnchored(uint256 indexed rootId, bytes32 indexed root, uint32 count)
func (_ProjectStateAnchor *ProjectStateAnchorFilterer) ParseRootAnchored(log types.Log) (*ProjectStateAnchorRootAnchored, error) {
	event := new(ProjectStateAnchorRootAnchored)
	if err := _ProjectStateAnchor.contract.UnpackLog(event, "RootAnchored", log); err != nil {
		return nil, err
	}
	event.Raw = log
	return event, nil
}
